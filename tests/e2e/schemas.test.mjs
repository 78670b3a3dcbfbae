// Tool schemas every client can read: the tools of every toolset
// (--toolsets all, conformance included) listed through the real daemon and
// the SDK client, and every inputSchema and outputSchema walked: no
// list-valued "type" anywhere (several clients refuse them; anyOf says the
// same), and no object property without its properties where the tool
// takes arguments in it (a bare {"type":"object"} tells a model nothing).
import { test } from "node:test";
import assert from "node:assert/strict";
import { stdioClient } from "./lib.mjs";

async function allTools(extra) {
  const { client } = await stdioClient(extra);
  try {
    const tools = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  } finally {
    await client.close();
  }
}

// Every place under schema (a JSON Schema) where "type" is not one string,
// as "tool.inputSchema.properties.x.type".
function listTypes(schema, where, out) {
  if (Array.isArray(schema)) {
    schema.forEach((s, i) => listTypes(s, `${where}[${i}]`, out));
    return out;
  }
  if (schema === null || typeof schema !== "object") return out;
  if ("type" in schema && typeof schema.type !== "string" && where.split(".").at(-1) !== "properties")
    out.push(`${where}.type = ${JSON.stringify(schema.type)}`);
  for (const [k, v] of Object.entries(schema)) listTypes(v, `${where}.${k}`, out);
  return out;
}

// Input properties declared as an object (alone or as an anyOf
// alternative) without the properties it takes.
function bareObjects(schema, where, out) {
  if (schema === null || typeof schema !== "object") return out;
  const alts = [schema, ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])];
  for (const s of alts)
    if (s.type === "object" && where !== "" && !s.properties && s.additionalProperties === undefined)
      out.push(where);
  for (const s of alts) {
    for (const [k, v] of Object.entries(s.properties ?? {})) bareObjects(v, `${where}.${k}`, out);
    if (s.items) bareObjects(s.items, `${where}[]`, out);
  }
  return out;
}

test("no tool of any toolset declares a list-valued type or a schema-less object argument", async () => {
  const tools = await allTools(["--toolsets", "all,conformance"]);
  const names = tools.map((t) => t.name);
  // Every toolset is there: one tool of each.
  for (const n of ["messagesSearch", "messages_search", "search_conversations", "search", "test_simple_text"])
    assert.ok(names.some((x) => x === n || x.replace(/\./g, "_") === n), `${n} listed (${names.length} tools)`);
  const bad = [];
  for (const t of tools) {
    listTypes(t.inputSchema, `${t.name}.inputSchema`, bad);
    if (t.outputSchema) listTypes(t.outputSchema, `${t.name}.outputSchema`, bad);
  }
  assert.deepEqual(bad, [], "list-valued types");
  const bare = [];
  for (const t of tools) {
    if (t.name.startsWith("test_") || /schema/.test(t.name)) continue; // the conformance suite's own
    bareObjects(t.inputSchema, t.name, bare);
  }
  assert.deepEqual(bare, [], "object arguments without their properties");
});

// Output-schema places that do not say what they hold: a property schema
// with no "type", "anyOf", "oneOf", "$ref", "enum" or "const" (the
// Inspector's schema lint warns on each: "{}" says nothing), and a
// "required" with no "properties" beside it.
function untyped(schema, where, out) {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return out;
  if (Array.isArray(schema.required) && !schema.properties && schema.required.length)
    out.push(`${where}: required without properties`);
  for (const [k, v] of Object.entries(schema.properties ?? {})) {
    if (v === null || typeof v !== "object" || !["type", "anyOf", "oneOf", "$ref", "enum", "const"].some((x) => x in v))
      out.push(`${where}.${k}: no type`);
    untyped(v, `${where}.${k}`, out);
  }
  if (schema.items) untyped(schema.items, `${where}[]`, out);
  for (const k of ["anyOf", "oneOf", "allOf"])
    (schema[k] ?? []).forEach((s, i) => untyped(s, `${where}.${k}[${i}]`, out));
  if (schema.additionalProperties && typeof schema.additionalProperties === "object")
    untyped(schema.additionalProperties, `${where}{}`, out);
  return out;
}

test("every property of every output schema states its type; no required without its properties", async () => {
  const tools = await allTools(["--toolsets", "all"]);
  const bad = [];
  for (const t of tools) if (t.outputSchema) untyped(t.outputSchema, t.name, bad);
  assert.deepEqual(bad, [], `${bad.length} untyped output-schema places`);
});

test("ajv in strict mode compiles every input and output schema of every toolset", async () => {
  const { default: Ajv } = await import("ajv");
  const tools = await allTools(["--toolsets", "all"]);
  const bad = [];
  for (const t of tools)
    for (const [which, schema] of [["inputSchema", t.inputSchema], ["outputSchema", t.outputSchema]]) {
      if (!schema) continue;
      const ajv = new Ajv({ strict: true, allErrors: true, logger: false });
      try {
        ajv.compile(schema);
      } catch (e) {
        bad.push(`${t.name}.${which}: ${e.message}`);
      }
    }
  assert.deepEqual(bad, []);
});
