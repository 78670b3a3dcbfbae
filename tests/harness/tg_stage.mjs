// tg_stage.mjs EXPORT TZ: prints a psql script that imports a Telegram
// Desktop export through the reference SQL mapping
// (tests/harness/tg_import_reference.sql), in the order the importer meets
// its parts: each chat's messages COPYed into ref_staging as the old reader
// wrote them (jansson's text: integers that fit 64 bits as integers, every
// other number as a real printed with 17 digits), then ref_tg_import_chat;
// personal_information and contacts through the store's own functions.
import fs from "node:fs";

const [file, tz] = process.argv.slice(2);
const src = fs.readFileSync(file, "utf8");

// A JSON parser that keeps number literals: {num: "text"}.
let pos = 0;
function ws() {
  while (pos < src.length && " \t\n\r".includes(src[pos])) pos++;
}
function value() {
  ws();
  const c = src[pos];
  if (c === "{") {
    pos++;
    const o = new Map();
    ws();
    if (src[pos] === "}") return pos++, o;
    for (;;) {
      ws();
      const k = str();
      ws();
      pos++; // :
      o.delete(k); // a repeated key: the last wins
      o.set(k, value());
      ws();
      if (src[pos++] === "}") return o;
    }
  }
  if (c === "[") {
    pos++;
    const a = [];
    ws();
    if (src[pos] === "]") return pos++, a;
    for (;;) {
      a.push(value());
      ws();
      if (src[pos++] === "]") return a;
    }
  }
  if (c === '"') return str();
  for (const [lit, v] of [["true", true], ["false", false], ["null", null]])
    if (src.startsWith(lit, pos)) return (pos += lit.length), v;
  const m = /^-?\d+(\.\d+)?([eE][-+]?\d+)?/.exec(src.slice(pos, pos + 400));
  pos += m[0].length;
  return { num: m[0] };
}
function str() {
  const start = pos;
  pos++;
  while (src[pos] !== '"') pos += src[pos] === "\\" ? 2 : 1;
  pos++;
  return JSON.parse(src.slice(start, pos));
}

// jansson's text of a number the reader read: an integer that fits 64 bits
// as is, anything else as a real, "%.17g" with ".0" when it looks integral
// and the exponent without "+" or leading zeros.
function numText(lit) {
  if (/^-?\d+$/.test(lit)) {
    const b = BigInt(lit);
    if (b >= -(2n ** 63n) && b < 2n ** 63n) return b.toString();
  }
  const x = Number(lit);
  let [mant, exp] = x.toExponential(16).split("e");
  exp = Number(exp);
  const trim = (t) => (t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t);
  if (exp < -4 || exp >= 17) return `${trim(mant)}e${exp}`;
  const s = trim(x.toPrecision(17));
  return /[.e]/.test(s) ? s : s + ".0";
}

function dump(v) {
  if (v === null) return "null";
  if (v === true || v === false) return String(v);
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(dump).join(",") + "]";
  if (v instanceof Map) return "{" + [...v].map(([k, x]) => JSON.stringify(k) + ":" + dump(x)).join(",") + "}";
  return numText(v.num);
}

function copyEscape(s) {
  return s.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r");
}

const out = [];
let chatKey = 0;
function lit(s) {
  return "$json$" + s + "$json$";
}
function chat(c, left) {
  const key = ++chatKey;
  const header = new Map([...c].filter(([k, v]) => k !== "messages" && !(v instanceof Map) && !Array.isArray(v)));
  const msgs = c.get("messages");
  if (Array.isArray(msgs) && msgs.length) {
    out.push("COPY ref_staging (import_id, chat_key, msg) FROM STDIN;");
    for (const m of msgs) out.push(`1\t${key}\t${copyEscape(dump(m))}`);
    out.push("\\.");
  }
  out.push(`SELECT ref_tg_import_chat(1, ${key}, ${lit(dump(header))}::jsonb, '${tz}'::interval, ${left});`);
}

const root = value();
for (const [k, v] of root) {
  if (k === "personal_information" && v instanceof Map) out.push(`SELECT parley_tg_import_self(${lit(dump(v))}::jsonb);`);
  if (k === "contacts" && v instanceof Map && Array.isArray(v.get("list")))
    out.push(`SELECT parley_tg_import_contacts(${lit(dump(v.get("list")))}::jsonb);`);
  if ((k === "chats" || k === "left_chats") && v instanceof Map && Array.isArray(v.get("list")))
    for (const c of v.get("list")) chat(c, k === "left_chats");
}
if (root.has("messages")) chat(root, false);
process.stdout.write(out.join("\n") + "\n");
