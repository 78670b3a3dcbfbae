#!/usr/bin/env bash
# bench/chatwise.sh [MESSAGES]: the ChatWise import and the chatwise tools.
# Makes an app.db with MESSAGES messages (default 100,000) in MESSAGES/100
# chats (sqlite3: English words and a few CJK ones; a rare word in a few
# chats, a common one everywhere), imports it with a release parleyd into a
# fresh database of a throw-away cluster with durability on (fsync, as
# users run it), imports it again (nothing changed), then measures the
# tools' latency through the MCP SDK (bench/chatwise_queries.mjs). Prints
# key=value lines.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
chats=$(( n / 100 > 0 ? n / 100 : 1 ))
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPARLEY_TESTS=OFF >/dev/null
cmake --build build-bench -j "$(nproc)" >/dev/null
work=$(mktemp -d /tmp/parley-bench-chatwise.XXXXXX)
chmod 755 "$work"
pg="$work/pg"
PARLEY_PG_EMBEDDED=build-bench/parleyd tests/harness/pg_cluster.sh start "$pg" >/dev/null
trap 'tests/harness/pg_cluster.sh destroy "$pg" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
psql -X -q -At -h "$pg" -U parley -d postgres -c "CREATE DATABASE bench"
url="host=$pg port=5432 user=parley dbname=bench"
build-bench/parleyd migrate --db "$url" 2>/dev/null
now_ms=$(( $(date +%s) * 1000 ))
sqlite3 "$work/app.db" >/dev/null <<SQL
PRAGMA journal_mode=WAL;
CREATE TABLE chat (id text PRIMARY KEY, title text, createdAt integer, updatedAt integer);
CREATE TABLE message (id text PRIMARY KEY, chatId text, role text, content text, createdAt integer,
                      meta text, generatedFiles text);
CREATE TABLE vocab (i integer PRIMARY KEY, w text);
INSERT INTO vocab VALUES (0,'the'),(1,'model'),(2,'answer'),(3,'python'),(4,'database'),(5,'index'),
  (6,'query'),(7,'server'),(8,'client'),(9,'memory'),(10,'thread'),(11,'async'),(12,'vector'),
  (13,'layout'),(14,'render'),(15,'cache'),(16,'latency'),(17,'deploy'),(18,'kernel'),
  (19,'network'),(20,'列表'),(21,'滚动'),(22,'优化'),(23,'数据'),(24,'线程'),(25,'异步');
WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM c WHERE k < $chats)
INSERT INTO chat SELECT 'chat-' || k, 'Chat ' || k || CASE WHEN k % 997 = 0 THEN ' zephyrine' ELSE '' END,
  $now_ms - k * 3600000, $now_ms - k * 3600000 FROM c;
WITH RECURSIVE m(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM m WHERE k < $n - 1)
INSERT INTO message
SELECT 'msg-' || k, 'chat-' || (1 + k % $chats), CASE WHEN k % 2 = 0 THEN 'user' ELSE 'assistant' END,
  (SELECT group_concat(w, ' ') FROM (SELECT w FROM vocab
     WHERE i IN ((k * 7) % 26, (k * 13 + 1) % 26, (k * 17 + 2) % 26, (k * 19 + 3) % 26,
                 (k * 23 + 4) % 26, (k * 29 + 5) % 26, (k * 31 + 6) % 26, (k * 37 + 7) % 26)))
    || CASE WHEN k % 4999 = 0 THEN ' zephyrine 琥珀色' ELSE '' END,
  $now_ms - (1 + k % $chats) * 3600000 + (k / $chats) * 1000, NULL, NULL
FROM m;
DROP TABLE vocab;
SQL
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "messages=$n chats=$chats app_db_bytes=$(stat -c %s "$work/app.db")"
for run in first again; do
  /usr/bin/time -f "%e %M" -o "$work/time" \
    build-bench/parleyd import chatwise "$work/app.db" --db "$url" 2>"$work/import.log"
  read -r secs rss <"$work/time"
  echo "import_$run: $(grep "imported" "$work/import.log" | sed 's/.*\[main\] //')"
  echo "import_${run}_seconds=$secs msgs_per_s=$(awk -v n="$n" -v s="$secs" 'BEGIN{printf "%.0f", n/s}') importer_peak_rss_kib=$rss"
done
PARLEYD=$PWD/build-bench/parleyd PARLEY_TEST_PG="$url" node bench/chatwise_queries.mjs 20
