// chatwise_queries.mjs: latencies of the chatwise tools through the official
// MCP SDK over stdio, on the database bench/chatwise.sh filled. Each query
// runs twice to warm up, then REPS times (expand: auto fewer); prints one
// key=value line per query with p50 and max in milliseconds.
//   PARLEYD=... PARLEY_TEST_PG=... node bench/chatwise_queries.mjs [REPS]
import { stdioClient } from "../tests/e2e/lib.mjs";

const reps = Number(process.argv[2]) || 20;
const queries = [
  ["rare_latin", { intent_query: "zephyrine" }],
  ["rare_cjk", { intent_query: "琥珀色" }],
  ["two_terms_all", { intent_query: ["zephyrine", "database"], match: "all" }],
  ["common_word_60d", { intent_query: "database", time_window: "60d" }],
  ["fuzzy_misspelling", { intent_query: "zephyrin", precision_mode: "fuzzy" }],
  ["gather_3_chats", null],
  ["expand_auto_rare", { intent_query: "zephyrine", expand: "auto" }, 3],
];
const { client } = await stdioClient(["--toolsets", "chatwise", "--log-level", "info"]);
try {
  const first = await client.callTool({ name: "search_conversations", arguments: { intent_query: "zephyrine" } });
  const top = first.structuredContent.topChatIds;
  for (const [name, args, n = reps] of queries) {
    const call = () => args
      ? client.callTool({ name: "search_conversations", arguments: args })
      : client.callTool({ name: "gather_chats", arguments: { chatIds: top.slice(0, 3) } });
    for (let i = 0; i < 2; i++) await call();
    const ms = [];
    let r;
    for (let i = 0; i < n; i++) {
      const t = process.hrtime.bigint();
      r = await call();
      ms.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
    ms.sort((a, b) => a - b);
    const hits = r.structuredContent.results?.length ?? r.structuredContent.narrative?.length;
    console.log(`${name} p50_ms=${ms[Math.floor(ms.length / 2)].toFixed(1)} max_ms=${ms[ms.length - 1].toFixed(1)} n=${n} answer_items=${hits}`);
  }
} finally {
  await client.close();
}
