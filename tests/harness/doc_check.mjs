#!/usr/bin/env node
// doc_check.mjs: checks Markdown docs against the files beside them and
// against the daemon (tests/integration/docs.sh, install.sh, package.sh).
//
//   node doc_check.mjs links FILE.md...
//       Every relative link of each file ([text](path), [text](path#anchor),
//       [text](#anchor), reference definitions "[x]: path") resolves: the
//       path (relative to the file's folder) exists, and an anchor names a
//       heading of the Markdown file it points into (GitHub's ids: lower
//       case, punctuation dropped, spaces as "-", "-1", "-2" for repeats)
//       or an <a id>/<a name> there. Links in code (fenced or `inline`)
//       and links with a scheme (https:, mailto:) are not checked. One
//       line per broken link ("FILE:LINE: TARGET: why"), exit 1 if any.
//
//   node doc_check.mjs defaults PARLEYD FILE...
//       Each default a file states for a setting equals the one
//       `PARLEYD --help` gives: in Markdown "`key` (default V)", "`key`,
//       default V", "`key`: words (default V" ("`--flag`" as "`key`") and
//       a bullet "- `key`: `V`"; in
//       a config file (packaging/parley.conf) the commented lines
//       "# key = V" after a line "# Defaults" up to the next blank line.
//       V is a number or in backticks; numbers are compared without
//       thousands separators and units.
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";

const [mode, ...rest] = process.argv.slice(2);
const problems = [];

// Lines of a Markdown file outside fenced code, each with inline code
// spans blanked out (so their text is neither a link nor a heading).
function proseLines(text) {
  const out = [];
  let fence = null;
  text.split("\n").forEach((line, i) => {
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === null) fence = m[1][0];
      else if (m[1][0] === fence) fence = null;
      return;
    }
    if (fence !== null || /^( {4}|\t)/.test(line)) return; // indented code too
    out.push({ n: i + 1, line: line.replace(/`[^`]*`/g, (s) => " ".repeat(s.length)) });
  });
  return out;
}

// GitHub's heading ids of a Markdown file, and explicit <a id|name>.
const anchorCache = new Map();
function anchorsOf(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const ids = new Set();
  const seen = new Map();
  const text = fs.readFileSync(file, "utf8");
  let fence = null;
  for (const line of text.split("\n")) {
    const f = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (f) {
      if (fence === null) fence = f[1][0];
      else if (f[1][0] === fence) fence = null;
      continue;
    }
    if (fence !== null) continue;
    for (const a of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) ids.add(a[1]);
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    let slug = h[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link's text
      .replace(/<[^>]+>/g, "")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const k = seen.get(slug) ?? 0;
    seen.set(slug, k + 1);
    ids.add(k === 0 ? slug : `${slug}-${k}`);
  }
  anchorCache.set(file, ids);
  return ids;
}

function checkLink(file, n, target) {
  target = target.trim().replace(/^<|>$/g, "");
  if (target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target)) return;
  const hash = target.indexOf("#");
  const rel = decodeURI(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
  const dest = rel === "" ? file : path.resolve(path.dirname(file), rel);
  if (!fs.existsSync(dest)) {
    problems.push(`${file}:${n}: ${target}: no such file (${dest})`);
    return;
  }
  if (anchor === null || anchor === "") return;
  if (!dest.endsWith(".md") || fs.statSync(dest).isDirectory()) {
    problems.push(`${file}:${n}: ${target}: an anchor into a file that is not Markdown`);
    return;
  }
  if (!anchorsOf(dest).has(anchor))
    problems.push(`${file}:${n}: ${target}: ${path.basename(dest)} has no heading with id '${anchor}'`);
}

function links(files) {
  for (const file of files) {
    for (const { n, line } of proseLines(fs.readFileSync(file, "utf8"))) {
      for (const m of line.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) checkLink(file, n, m[1]);
      const def = /^\s{0,3}\[[^\]]+\]:\s+(\S+)/.exec(line);
      if (def) checkLink(file, n, def[1]);
    }
  }
}

// Each setting's default as `parleyd --help` prints it: the option line
// "  --flag ARG   text" is followed by "   env VAR; default VALUE".
function helpDefaults(parleyd) {
  const help = execFileSync(parleyd, ["--help"], { encoding: "utf8" });
  const map = new Map();
  let key = null;
  for (const line of help.split("\n")) {
    const o = /^ {2}--([a-z0-9-]+)/.exec(line);
    if (o) {
      key = o[1].replace(/-/g, "_");
      continue;
    }
    const d = /^\s+env \S+; default (.*)$/.exec(line);
    if (d && key) map.set(key, d[1].trim());
  }
  if (map.size < 20) throw new Error(`parsed only ${map.size} defaults from ${parleyd} --help`);
  return map;
}

// A default as words to compare: no quotes or backticks, no thousands
// separators, no unit after a number, "none" for the empty ones.
function norm(v) {
  let s = v.trim().replace(/[`'"]/g, "").replace(/[.,;:]$/, "").trim();
  if (/^\(?(none|unset|empty|off)\)?$/i.test(s) || s === "") return "(none)";
  if (/^[\d,]+(\.\d+)?(\s*[a-z%]+)?$/i.test(s)) s = s.replace(/,/g, "").replace(/\s*[a-z%]+$/i, "");
  return s;
}

function sameDefault(doc, help) {
  const d = norm(doc);
  const h = norm(help);
  if (d === h || `(${d})` === h) return true;
  // A stated default may be the first of a longer one: "$XDG_DATA_HOME/parley"
  // of "($XDG_DATA_HOME/parley; as root: /var/lib/parley)".
  return h.replace(/^\(/, "").split(/[;(]/)[0].trim() === d;
}

function defaults(parleyd, files) {
  const def = helpDefaults(parleyd);
  let checked = 0;
  const expect = (file, n, key, value) => {
    if (!def.has(key)) return; // not a setting (a tool's parameter, say)
    checked++;
    if (process.env.DOC_CHECK_VERBOSE) console.log(`${file}:${n}: ${key} = ${value.trim()} (--help: ${def.get(key)})`);
    if (!sameDefault(value, def.get(key)))
      problems.push(`${file}:${n}: ${key}: the default is stated as '${value.trim()}'; parleyd --help says '${def.get(key)}'`);
  };
  for (const file of files) {
    const text = fs.readFileSync(file, "utf8");
    if (!file.endsWith(".md")) {
      let inDefaults = false;
      text.split("\n").forEach((line, i) => {
        if (/^#\s*Defaults\b/i.test(line)) inDefaults = true;
        else if (line.trim() === "") inDefaults = false;
        const m = /^#\s*([a-z_][a-z0-9_-]*)\s*=\s*(.*)$/.exec(line);
        if (inDefaults && m) expect(file, i + 1, m[1].replace(/-/g, "_"), m[2]);
      });
      continue;
    }
    // Markdown: paragraphs (a statement may wrap), fenced code and
    // tables (generated from --help) out.
    let fence = null;
    let para = [];
    let start = 0;
    const flush = () => {
      const p = para.join("\n");
      const at = (index) => start + (p.slice(0, index).match(/\n/g) ?? []).length;
      for (const m of p.matchAll(/^\s*[-*] `([a-z_][a-z0-9_]*)`:\s+`([^`]*)`/gm)) expect(file, at(m.index), m[1], m[2]);
      for (const m of p.matchAll(/`(?:--)?([a-z_][a-z0-9_-]*)`(?:[^`.;()]{0,80}\(|,\s*|\s*\()(?:by\s+)?default:?\s+(`[^`]*`|\d[\d,.]*(?:\s*(?:ms|s|MB|MiB|KiB|%))?)/g))
        expect(file, at(m.index), m[1].replace(/-/g, "_"), m[2]);
      para = [];
    };
    text.split("\n").forEach((line, i) => {
      const f = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
      if (f) {
        flush();
        if (fence === null) fence = f[1][0];
        else if (f[1][0] === fence) fence = null;
        return;
      }
      if (fence !== null) return;
      if (line.trim() === "" || line.startsWith("|") || /^\s*[-*] /.test(line)) flush();
      if (line.trim() === "" || line.startsWith("|")) return;
      if (para.length === 0) start = i + 1;
      para.push(line);
    });
    flush();
  }
  if (checked === 0) problems.push(`no stated default found in ${files.join(", ")}`);
  else console.log(`doc_check: ${checked} stated defaults match parleyd --help`);
}

if (mode === "links") links(rest);
else if (mode === "defaults") defaults(rest[0], rest.slice(1));
else {
  console.error("usage: doc_check.mjs links FILE.md... | defaults PARLEYD FILE...");
  process.exit(2);
}
for (const p of problems) console.error(p);
process.exit(problems.length ? 1 : 0);
