#!/usr/bin/env node
// xrpc_emulator.mjs: a loopback Bluesky (AT Protocol) PDS + AppView for tests.
// It answers the XRPC calls a read-only client makes, in the shapes the
// com.atproto and app.bsky lexicons define: createSession, refreshSession,
// getSession and deleteSession (app-password login, rotating refresh tokens,
// a createSession rate limit), getProfile, searchPosts, getPostThread,
// getAuthorFeed and resolveHandle, over three seeded accounts and a fixed set
// of posts dated 2024-10-06 (a thread, posts with markdown-like text, images,
// an external link, fifteen posts that mention "markdown" for paging).
//
//   node xrpc_emulator.mjs [--port N]   prints {"port": N} on stdout (0: any)
//
// Accounts: alice.test did:plc:alice000000000000000000, bob.test
// did:plc:bob00000000000000000000, carol.test did:plc:carol000000000000000000;
// app password "abcd-efgh-ijkl-mnop" for each. Tokens are JWT-shaped (header
// {"typ":"at+jwt"|"refresh+jwt","alg":"ES256K"}, a fake signature) and only
// valid while in the emulator's table. refreshSession revokes the refresh
// token it was given (using it again: 400 ExpiredToken "Token has been
// revoked"; the real PDS has a grace period). app.bsky.* calls need the header
// atproto-proxy: did:web:api.bsky.app#bsky_appview (the real PDS would fall
// back to its default AppView; here a missing one is a 400, counted).
//
// Control (JSON over HTTP, not XRPC):
//   GET  /control/stats   {"createSession": n, "refreshSession": n,
//                          "calls": {"<nsid>": n}, "missingProxy": n,
//                          "badProxy": n, "rateLimited": n,
//                          "lastAuthorization": "Bearer" | null}
//                         (every /xrpc/ request counts in calls, failed ones
//                         too; createSession and refreshSession count the
//                         POSTs to them, refused and rate-limited ones too;
//                         lastAuthorization is the scheme of the last
//                         Authorization header an XRPC call carried)
//   POST /control/config  {"accessTtlS": 7200, "refreshTtlS": 7776000,
//                          "createSessionLimit": 30, "rateWindowS": 300,
//                          "passwords": {"alice.test": "pw", ...}}
//                         any subset; answers the config. A password given
//                         here is accepted besides the seeded one (null
//                         forgets it); TTLs apply to tokens issued later;
//                         changing the limit or window restarts the window
//   POST /control/expire  every access token issued so far is expired from
//                         now on (refresh tokens stay valid): {"expired": n}
//   POST /control/post    {"handle": "bob.test", "text": "...", "replyTo": uri}
//                         adds a post dated now; answers its postView
//   GET  /control/posts   the posts, oldest first: [{"key", "uri", "cid",
//                         "handle", "text", "createdAt"}] (key names the
//                         seeded ones: "thread.root", "alice.features", ...)
//   POST /control/reset   back to the seeded posts, default config, no
//                         tokens, zeroed stats
import http from "node:http";

const APP_PASSWORD = "abcd-efgh-ijkl-mnop";
const PROXY = "did:web:api.bsky.app#bsky_appview";
const ACCESS_AUD = "did:web:pds.xrpc-emulator.test"; // the PDS host
const REFRESH_AUD = "did:web:entryway.xrpc-emulator.test"; // the entryway
const DEFAULTS = { accessTtlS: 7200, refreshTtlS: 90 * 86400, createSessionLimit: 30, rateWindowS: 300 };

const ACCOUNTS = [
  { handle: "alice.test", did: "did:plc:alice000000000000000000", displayName: "Alice Example",
    description: "Building tools for LLMs.\nMarkdown enthusiast.", banner: true,
    followersCount: 1523, followsCount: 312, createdAt: "2023-04-12T09:30:11.412Z", clock: 5 },
  { handle: "bob.test", did: "did:plc:bob00000000000000000000", displayName: "Bob Tester",
    description: "Escaping things for a living.", banner: false,
    followersCount: 87, followsCount: 140, createdAt: "2023-07-01T17:02:45.000Z", clock: 11 },
  // carol: no description (the field is left out, as the AppView does)
  { handle: "carol.test", did: "did:plc:carol000000000000000000", displayName: "Carol 🌸",
    banner: true, followersCount: 0, followsCount: 3, createdAt: "2024-01-20T11:11:11.111Z", clock: 17 },
];

// ---- deterministic bytes: hashes, CIDs, TIDs, base64url ----

function digest(str, n = 32) {
  // FNV-1a over the string, stretched with xorshift; not cryptographic.
  let h = 0x811c9dc5;
  for (const b of Buffer.from(str, "utf8")) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) {
    h ^= h << 13; h >>>= 0;
    h ^= h >>> 17;
    h ^= h << 5; h >>>= 0;
    out[i] = (h >>> 8) & 0xff;
  }
  return out;
}

function base32(bytes) {
  const A = "abcdefghijklmnopqrstuvwxyz234567";
  let bits = 0, value = 0, s = "";
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      s += A[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) s += A[(value << (5 - bits)) & 31];
  return s;
}

// CIDv1, sha2-256 shaped: dag-cbor records are "bafyrei...", raw blobs "bafkrei...".
const cidOf = (str, codec = 0x71) => "b" + base32(Buffer.concat([Buffer.from([0x01, codec, 0x12, 0x20]), digest(str)]));

// TID: 53 bits of microseconds since the epoch, 10 bits of clock id, 13
// characters of base32-sortable.
const S32 = "234567abcdefghijklmnopqrstuvwxyz";
function tid(micros, clock) {
  let v = (BigInt(micros) << 10n) | BigInt(clock & 1023);
  let s = "";
  for (let i = 0; i < 13; i++) {
    s = S32[Number(v & 31n)] + s;
    v >>= 5n;
  }
  return s;
}

const b64url = (x) => (Buffer.isBuffer(x) ? x : Buffer.from(typeof x === "string" ? x : JSON.stringify(x))).toString("base64url");

// ---- state ----

let base = ""; // http://127.0.0.1:PORT, once listening
let S; // everything /control/reset puts back

function fresh() {
  S = {
    config: { ...DEFAULTS },
    passwords: new Map(), // did -> extra password
    tokens: new Map(), // jwt -> {kind, did, exp, jti, revoked, forcedExpired}
    posts: [], // oldest first
    byUri: new Map(),
    stats: { createSession: 0, refreshSession: 0, calls: {}, missingProxy: 0, badProxy: 0, rateLimited: 0, lastAuthorization: null },
    rate: { start: 0, count: 0 },
    serial: 0,
    lastMs: 0,
  };
  seed();
}

const account = (id) => {
  if (typeof id !== "string") return undefined;
  const k = id.toLowerCase().replace(/^@/, "");
  return ACCOUNTS.find((a) => a.did === id || a.handle === k);
};

function addPost({ key, author, text, createdAt, indexedAt, replyTo, embed, facets, counts = {} }) {
  const acct = account(author);
  const ms = Date.parse(createdAt);
  S.lastMs = Math.max(S.lastMs, ms);
  const rkey = tid(ms * 1000 + (S.posts.length % 1000), acct.clock);
  const uri = `at://${acct.did}/app.bsky.feed.post/${rkey}`;
  const record = { $type: "app.bsky.feed.post", text, createdAt, langs: ["en"] };
  let reply;
  if (replyTo) {
    const parent = { uri: replyTo.uri, cid: replyTo.cid };
    reply = { root: replyTo.reply ? replyTo.reply.root : parent, parent };
    record.reply = reply;
  }
  let embedView;
  if (embed?.images) {
    const blobs = embed.images.map((im, i) => ({ ...im, cid: cidOf(`${uri}#img${i}`, 0x55) }));
    record.embed = { $type: "app.bsky.embed.images", images: blobs.map((b) => ({
      alt: b.alt,
      image: { $type: "blob", ref: { $link: b.cid }, mimeType: "image/jpeg", size: b.size },
      aspectRatio: { width: b.width, height: b.height } })) };
    embedView = { $type: "app.bsky.embed.images#view", images: blobs.map((b) => ({
      thumb: `https://cdn.bsky.app/img/feed_thumbnail/plain/${acct.did}/${b.cid}@jpeg`,
      fullsize: `https://cdn.bsky.app/img/feed_fullsize/plain/${acct.did}/${b.cid}@jpeg`,
      alt: b.alt,
      aspectRatio: { width: b.width, height: b.height } })) };
  } else if (embed?.external) {
    record.embed = { $type: "app.bsky.embed.external", external: { ...embed.external } };
    embedView = { $type: "app.bsky.embed.external#view", external: { ...embed.external } };
  }
  if (facets) record.facets = facets;
  const p = {
    key, uri, rkey, did: acct.did, text, createdAt, indexedAt: indexedAt ?? createdAt,
    cid: cidOf(JSON.stringify(record) + uri), record, reply, embedView,
    replyCount: counts.replyCount ?? 0, repostCount: counts.repostCount ?? 0,
    likeCount: counts.likeCount ?? 0, quoteCount: counts.quoteCount ?? 0,
  };
  S.posts.push(p);
  S.byUri.set(uri, p);
  return p;
}

function linkFacet(text, url) {
  const start = Buffer.byteLength(text.slice(0, text.indexOf(url)), "utf8");
  return [{ $type: "app.bsky.richtext.facet", index: { byteStart: start, byteEnd: start + Buffer.byteLength(url, "utf8") },
            features: [{ $type: "app.bsky.richtext.facet#link", uri: url }] }];
}

function seed() {
  let n = 0;
  const at = (hms) => `2024-10-06T${hms}.000Z`;
  // indexedAt: the AppView saw the post a little after its createdAt.
  const post = (key, author, hms, text, counts, more = {}) => {
    const createdAt = at(hms);
    const indexedAt = new Date(Date.parse(createdAt) + 700 + ((n++ * 137) % 900)).toISOString();
    return addPost({ key, author, text, createdAt, indexedAt, counts, ...more });
  };
  post("bob.run", "bob.test", "07:15:00", "Morning run done. 5k in 27 minutes.", { likeCount: 4 });
  post("carol.md.morning", "carol.test", "07:42:10", "Good morning! ☕ Coffee first, then markdown.", { likeCount: 2 });
  post("alice.md.tables", "alice.test", "08:05:12", "MARKDOWN tables are underrated.", { likeCount: 31, repostCount: 6, replyCount: 0, quoteCount: 1 });
  post("alice.features", "alice.test", "08:30:00", "Check out my project!\n## Features\n- Fast\n- Simple", { likeCount: 12, repostCount: 3 });
  post("bob.quote", "bob.test", "09:30:00",
    "Quoting the spec:\n> Markdown is a text-to-HTML conversion tool for web writers.\n# Heading\n```python\nprint(\"hi\")\n```\nThoughts?",
    { likeCount: 9, repostCount: 1 });
  const root = post("thread.root", "alice.test", "10:15:33", "Hot take: Markdown > JSON for LLM tools",
    { likeCount: 234, repostCount: 89, replyCount: 45, quoteCount: 12 });
  const agree = post("thread.bob", "bob.test", "10:17:02", "Agree! But what about content escaping?", { likeCount: 18, replyCount: 1 }, { replyTo: root });
  post("thread.bob.self", "bob.test", "10:18:40", "Indent user content. Simple.", { likeCount: 25 }, { replyTo: agree });
  const disagree = post("thread.carol", "carol.test", "10:21:15", "Disagree. JSON has structure...", { likeCount: 7, replyCount: 1, repostCount: 1 }, { replyTo: root });
  const because = post("thread.alice", "alice.test", "10:24:50", "Because LLMs parse language, not schemas", { likeCount: 41, replyCount: 1, repostCount: 2 }, { replyTo: disagree });
  post("thread.carol.nested", "carol.test", "10:26:05", "What about nested threads?", { likeCount: 3 }, { replyTo: because });
  post("bob.md.commits", "bob.test", "11:05:27", "markdown in commit messages? Hot take: no.", { likeCount: 15, repostCount: 2 });
  post("carol.md.fine", "carol.test", "11:48:36", "mArKdOwN is fine, really.", {});
  post("alice.md.commonmark", "alice.test", "12:40:00", "Is CommonMark the same thing as markdown? Asking for a friend.", { likeCount: 8 });
  post("bob.md.notes", "bob.test", "13:13:13", "My notes app keeps everything as plain Markdown files.", { likeCount: 5, quoteCount: 1 });
  const url = "https://example.com/blog/markdown-for-agents";
  const linkText = `Wrote up how we render chat archives as markdown for agents: ${url}`;
  post("alice.link", "alice.test", "14:02:19", linkText, { likeCount: 56, repostCount: 14, quoteCount: 3 }, {
    embed: { external: { uri: url, title: "Markdown for agents",
                         description: "Why chat archives reach LLM agents as markdown, not JSON." } },
    facets: linkFacet(linkText, url) });
  post("carol.md.terminal", "carol.test", "15:30:00", "Rendering Markdown in a terminal is harder than it looks", { likeCount: 11 });
  post("alice.md.docs", "alice.test", "16:20:45", "Converted the whole docs site to Markdown this afternoon.", { likeCount: 20, repostCount: 1 });
  post("carol.photos", "carol.test", "17:02:44", "Photos from the weekend", { likeCount: 64, repostCount: 2 }, {
    embed: { images: [{ alt: "A cat on a keyboard", width: 2000, height: 1500, size: 412733 },
                      { alt: "", width: 1080, height: 1350, size: 298104 }] } });
  post("bob.md.footnotes", "bob.test", "18:45:02", "Learned today that Markdown has no standard footnote syntax.", { likeCount: 6 });
  post("alice.unicode", "alice.test", "19:19:19", "Привет, мир! 👋 Unicode check: naïve café, 数据", { likeCount: 1 });
  post("carol.md.libs", "carol.test", "20:10:59", "markdown-it vs marked: which one do you use?", { replyCount: 0, likeCount: 0 });
  post("bob.md.resume", "bob.test", "21:30:00", "Wrote my resume in markdown; recruiters loved it", { likeCount: 13, repostCount: 1 });
  post("alice.md.last", "alice.test", "22:05:05", "Last markdown post of the day, promise.", { likeCount: 9 });
}

// ---- views ----

const avatarOf = (a) => `https://cdn.bsky.app/img/avatar/plain/${a.did}/${cidOf(`avatar:${a.did}`, 0x55)}@jpeg`;
const bannerOf = (a) => `https://cdn.bsky.app/img/banner/plain/${a.did}/${cidOf(`banner:${a.did}`, 0x55)}@jpeg`;

function authorView(a) {
  return { did: a.did, handle: a.handle, displayName: a.displayName, avatar: avatarOf(a),
           viewer: { muted: false, blockedBy: false }, labels: [], createdAt: a.createdAt };
}

function profileView(a) {
  return {
    did: a.did, handle: a.handle, displayName: a.displayName,
    ...(a.description ? { description: a.description } : {}),
    avatar: avatarOf(a),
    ...(a.banner ? { banner: bannerOf(a) } : {}),
    followersCount: a.followersCount, followsCount: a.followsCount,
    postsCount: S.posts.filter((p) => p.did === a.did).length,
    associated: { lists: 0, feedgens: 0, starterPacks: 0, labeler: false },
    indexedAt: a.createdAt, createdAt: a.createdAt,
    viewer: { muted: false, blockedBy: false }, labels: [],
  };
}

function postView(p) {
  return {
    uri: p.uri, cid: p.cid, author: authorView(account(p.did)), record: p.record,
    ...(p.embedView ? { embed: p.embedView } : {}),
    replyCount: p.replyCount, repostCount: p.repostCount, likeCount: p.likeCount, quoteCount: p.quoteCount,
    indexedAt: p.indexedAt, viewer: { threadMuted: false, embeddingDisabled: false }, labels: [],
  };
}

const unionPost = (uri) => {
  const p = S.byUri.get(uri);
  return p ? { $type: "app.bsky.feed.defs#postView", ...postView(p) } : { $type: "app.bsky.feed.defs#notFoundPost", uri, notFound: true };
};

const childrenOf = (p) => S.posts.filter((c) => c.reply?.parent.uri === p.uri); // oldest first

function parentNode(uri, height) {
  const p = S.byUri.get(uri);
  if (!p) return { $type: "app.bsky.feed.defs#notFoundPost", uri, notFound: true };
  const node = { $type: "app.bsky.feed.defs#threadViewPost", post: postView(p) };
  if (p.reply && height > 1) node.parent = parentNode(p.reply.parent.uri, height - 1);
  return node;
}

function replyNode(p, depth) {
  const node = { $type: "app.bsky.feed.defs#threadViewPost", post: postView(p) };
  if (depth > 0) node.replies = childrenOf(p).map((c) => replyNode(c, depth - 1));
  return node;
}

function didDoc(a) {
  const key = "zQ3sh" + [...digest(`key:${a.did}`, 44)].map((b) => "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"[b % 58]).join("");
  return {
    "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1",
                 "https://w3id.org/security/suites/secp256k1-2019/v1"],
    id: a.did,
    alsoKnownAs: [`at://${a.handle}`],
    verificationMethod: [{ id: `${a.did}#atproto`, type: "Multikey", controller: a.did, publicKeyMultibase: key }],
    service: [{ id: "#atproto_pds", type: "AtprotoPersonalDataServer", serviceEndpoint: base }],
  };
}

// ---- tokens ----

function issue(a, kind) {
  const iat = Math.floor(Date.now() / 1000);
  const jti = b64url(digest(`jti:${S.serial++}:${a.did}:${kind}`, 24));
  const header = { typ: kind === "access" ? "at+jwt" : "refresh+jwt", alg: "ES256K" };
  const payload = kind === "access"
    ? { scope: "com.atproto.appPass", sub: a.did, aud: ACCESS_AUD, iat, exp: iat + S.config.accessTtlS, jti }
    : { scope: "com.atproto.refresh", sub: a.did, aud: REFRESH_AUD, iat, exp: iat + S.config.refreshTtlS, jti };
  const signing = `${b64url(header)}.${b64url(payload)}`;
  const jwt = `${signing}.${digest(signing, 64).toString("base64url")}`;
  S.tokens.set(jwt, { kind, did: a.did, exp: payload.exp, jti, revoked: false, forcedExpired: false });
  return jwt;
}

function session(a) {
  return { accessJwt: issue(a, "access"), refreshJwt: issue(a, "refresh"), handle: a.handle, did: a.did,
           didDoc: didDoc(a), active: true };
}

class XrpcError extends Error {
  constructor(status, error, message, headers = {}) {
    super(message);
    Object.assign(this, { status, error, headers });
  }
}
const invalid = (message, error = "InvalidRequest") => new XrpcError(400, error, message);

// The token of kind ("access" | "refresh") the request carries, as the PDS
// checks it: present, known (signature), not expired, of the right type.
function authenticate(req, kind) {
  const h = req.headers.authorization;
  if (!h) throw new XrpcError(401, "AuthMissing", "Authentication Required");
  const m = /^(\S+)\s+(\S+)\s*$/.exec(h);
  if (!m || m[1].toLowerCase() !== "bearer") throw invalid("Unexpected authorization type", "InvalidToken");
  const t = S.tokens.get(m[2]);
  if (!t) throw invalid("Token could not be verified", "InvalidToken");
  if (t.forcedExpired || Date.now() / 1000 >= t.exp) throw invalid("Token has expired", "ExpiredToken");
  if (t.kind !== kind) throw invalid("Invalid token type", "InvalidToken");
  if (t.revoked) throw invalid("Token has been revoked", "ExpiredToken");
  return { ...t, jwt: m[2], account: account(t.did) };
}

// ---- parameters ----

function intParam(q, name, def, min, max) {
  const v = q.get(name);
  if (v === null || v === "") return def;
  if (!/^-?\d+$/.test(v)) throw invalid(`Error: ${name} must be an integer`);
  const n = Number(v);
  if (n < min) throw invalid(`Error: ${name} can not be less than ${min}`);
  if (n > max) throw invalid(`Error: ${name} can not be greater than ${max}`);
  return n;
}

function required(q, name) {
  const v = q.get(name);
  if (v === null) throw invalid(`Error: Params must have the property "${name}"`);
  return v;
}

function actorParam(q, name = "actor") {
  const v = required(q, name);
  const a = account(v);
  if (!a) throw invalid("Profile not found");
  return a;
}

// ---- methods ----

function rateHeaders() {
  const { createSessionLimit: limit, rateWindowS: w } = S.config;
  const now = Date.now();
  if (!S.rate.start || now >= S.rate.start + w * 1000) S.rate = { start: now, count: 0 };
  S.rate.count++;
  return {
    over: S.rate.count > limit,
    headers: {
      "ratelimit-limit": String(limit),
      "ratelimit-remaining": String(Math.max(0, limit - S.rate.count)),
      "ratelimit-reset": String(Math.ceil((S.rate.start + w * 1000) / 1000)),
      "ratelimit-policy": `${limit};w=${w}`,
    },
  };
}

function jsonInput(req, body) {
  const ct = req.headers["content-type"];
  if (!ct) throw invalid("Request encoding (Content-Type) required but not provided");
  if (!/^application\/json\b/i.test(ct)) throw invalid(`Wrong request encoding (Content-Type): ${ct}`);
  try {
    const v = JSON.parse(body);
    if (v && typeof v === "object" && !Array.isArray(v)) return v;
  } catch {}
  throw invalid("Error: Input must be an object");
}

const METHODS = {
  "com.atproto.server.createSession": { http: "POST", fn(req, q, body) {
    S.stats.createSession++;
    const rate = rateHeaders();
    if (rate.over) {
      S.stats.rateLimited++;
      rate.headers["ratelimit-remaining"] = "0";
      throw new XrpcError(429, "RateLimitExceeded", "Rate Limit Exceeded", rate.headers);
    }
    const fail = (e) => { e.headers = { ...rate.headers, ...e.headers }; return e; };
    let input;
    try { input = jsonInput(req, body); } catch (e) { throw fail(e); }
    for (const k of ["identifier", "password"]) {
      if (typeof input[k] !== "string") throw fail(invalid(`Error: Input must have the property "${k}"`));
    }
    const a = account(input.identifier.trim());
    const ok = a && (input.password === APP_PASSWORD || (S.passwords.has(a.did) && input.password === S.passwords.get(a.did)));
    if (!ok) throw fail(new XrpcError(401, "AuthenticationRequired", "Invalid identifier or password"));
    return { body: session(a), headers: rate.headers };
  } },
  "com.atproto.server.refreshSession": { http: "POST", fn(req) {
    S.stats.refreshSession++;
    const t = authenticate(req, "refresh");
    S.tokens.get(t.jwt).revoked = true;
    return session(t.account);
  } },
  "com.atproto.server.getSession": { http: "GET", fn(req) {
    const t = authenticate(req, "access");
    return { handle: t.account.handle, did: t.did, didDoc: didDoc(t.account), active: true };
  } },
  "com.atproto.server.deleteSession": { http: "POST", fn(req) {
    const t = authenticate(req, "refresh");
    S.tokens.get(t.jwt).revoked = true;
    return null;
  } },
  "com.atproto.identity.resolveHandle": { http: "GET", fn(req, q) {
    const a = account(required(q, "handle"));
    if (!a || a.did === q.get("handle")) throw invalid("Unable to resolve handle");
    return { did: a.did };
  } },
  "app.bsky.actor.getProfile": { http: "GET", appview: true, fn(req, q) {
    return profileView(actorParam(q));
  } },
  "app.bsky.feed.searchPosts": { http: "GET", appview: true, fn(req, q) {
    const words = required(q, "q").toLowerCase().split(/\s+/).filter(Boolean);
    const limit = intParam(q, "limit", 25, 1, 100);
    const sort = q.get("sort") ?? "latest";
    if (sort !== "latest" && sort !== "top") throw invalid('Error: sort must be one of ("top"|"latest")');
    const author = q.get("author") ? account(q.get("author")) : null;
    if (q.get("author") && !author) return { posts: [], hitsTotal: 0 };
    const cursor = q.get("cursor");
    if (cursor && !/^\d+$/.test(cursor)) throw invalid("Malformed cursor");
    const offset = cursor ? Number(cursor) : 0;
    let hits = S.posts.filter((p) => words.length > 0 && (!author || p.did === author.did) &&
                                     words.every((w) => p.text.toLowerCase().includes(w)));
    hits = hits.reverse(); // newest first
    if (sort === "top") hits.sort((x, y) => y.likeCount - x.likeCount);
    const page = hits.slice(offset, offset + limit);
    return { ...(offset + limit < hits.length ? { cursor: String(offset + limit) } : {}),
             hitsTotal: hits.length, posts: page.map(postView) };
  } },
  "app.bsky.feed.getPostThread": { http: "GET", appview: true, fn(req, q) {
    const uri = required(q, "uri");
    const depth = intParam(q, "depth", 6, 0, 1000);
    const parentHeight = intParam(q, "parentHeight", 80, 0, 1000);
    const m = /^at:\/\/([^/]+)\/([^/]+)\/([^/?#]+)$/.exec(uri);
    if (!m) throw invalid("Error: uri must be a valid at-uri");
    const a = account(m[1]);
    const p = a && S.byUri.get(`at://${a.did}/${m[2]}/${m[3]}`);
    if (!p) throw invalid(`Post not found: ${uri}`, "NotFound");
    const thread = replyNode(p, depth);
    if (p.reply && parentHeight > 0) {
      // $type, post, parent, replies: the order the AppView writes them in
      const { replies, ...rest } = thread;
      return { thread: { ...rest, parent: parentNode(p.reply.parent.uri, parentHeight), ...(replies ? { replies } : {}) } };
    }
    return { thread };
  } },
  "app.bsky.feed.getAuthorFeed": { http: "GET", appview: true, fn(req, q) {
    const a = actorParam(q);
    const limit = intParam(q, "limit", 50, 1, 100);
    const filter = q.get("filter") ?? "posts_with_replies";
    const cursor = q.get("cursor");
    if (cursor && Number.isNaN(Date.parse(cursor))) throw invalid("Malformed cursor");
    let items = S.posts.filter((p) => p.did === a.did).reverse(); // newest first
    if (filter === "posts_no_replies") items = items.filter((p) => !p.reply);
    else if (filter === "posts_with_media") items = items.filter((p) => p.embedView?.$type === "app.bsky.embed.images#view");
    // the cursor is the createdAt of the last post of the previous page
    if (cursor) items = items.filter((p) => Date.parse(p.createdAt) < Date.parse(cursor));
    const page = items.slice(0, limit);
    const more = items.length > limit;
    return {
      ...(more ? { cursor: page[page.length - 1].createdAt } : {}),
      feed: page.map((p) => ({ post: postView(p),
        ...(p.reply ? { reply: { root: unionPost(p.reply.root.uri), parent: unionPost(p.reply.parent.uri) } } : {}) })),
    };
  } },
};

// ---- control ----

function control(req, res, path, args) {
  if (path === "/control/stats") return reply(res, 200, S.stats);
  if (path === "/control/posts") {
    return reply(res, 200, S.posts.map((p) => ({ key: p.key ?? null, uri: p.uri, cid: p.cid, handle: account(p.did).handle,
                                                 text: p.text, createdAt: p.createdAt })));
  }
  if (req.method !== "POST") return reply(res, 405, { error: "use POST" });
  if (path === "/control/reset") {
    fresh();
    return reply(res, 200, { posts: S.posts.length });
  }
  if (path === "/control/config") {
    for (const k of Object.keys(DEFAULTS)) {
      if (args[k] === undefined) continue;
      if (!Number.isFinite(args[k]) || args[k] < 0) return reply(res, 400, { error: `${k} must be a number >= 0` });
      S.config[k] = args[k];
      if (k === "createSessionLimit" || k === "rateWindowS") S.rate = { start: 0, count: 0 };
    }
    for (const [who, pw] of Object.entries(args.passwords ?? {})) {
      const a = account(who);
      if (!a) return reply(res, 400, { error: `unknown account ${who}` });
      if (pw === null) S.passwords.delete(a.did);
      else S.passwords.set(a.did, String(pw));
    }
    return reply(res, 200, { ...S.config, passwords: Object.fromEntries([...S.passwords].map(([d, pw]) => [account(d).handle, pw])) });
  }
  if (path === "/control/expire") {
    let expired = 0;
    for (const t of S.tokens.values()) {
      if (t.kind === "access" && !t.forcedExpired) {
        t.forcedExpired = true;
        expired++;
      }
    }
    return reply(res, 200, { expired });
  }
  if (path === "/control/post") {
    const a = account(args.handle);
    if (!a) return reply(res, 400, { error: `unknown account ${args.handle}` });
    if (typeof args.text !== "string") return reply(res, 400, { error: "text must be a string" });
    let parent;
    if (args.replyTo) {
      parent = S.byUri.get(args.replyTo);
      if (!parent) return reply(res, 400, { error: `unknown post ${args.replyTo}` });
    }
    const ms = Math.max(Date.now(), S.lastMs + 1); // distinct createdAt (and rkey) for each post
    const createdAt = new Date(ms).toISOString();
    const p = addPost({ author: a.did, text: args.text, createdAt, replyTo: parent });
    if (parent) parent.replyCount++;
    return reply(res, 200, postView(p));
  }
  return reply(res, 404, { error: "no such control endpoint" });
}

// ---- server ----

function reply(res, status, obj, headers = {}) {
  if (obj === null) {
    res.writeHead(status, headers);
    return res.end();
  }
  const body = JSON.stringify(obj);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

function xrpc(req, res, url, body) {
  const nsid = url.pathname.slice("/xrpc/".length);
  S.stats.calls[nsid] = (S.stats.calls[nsid] ?? 0) + 1;
  const auth = req.headers.authorization;
  if (auth) S.stats.lastAuthorization = auth.split(/\s+/)[0];
  const m = METHODS[nsid];
  try {
    if (!m) throw new XrpcError(501, "MethodNotImplemented", "Method Not Implemented");
    if (req.method !== m.http && !(m.http === "GET" && req.method === "HEAD")) {
      throw invalid(`Incorrect HTTP method (${req.method}) expected ${m.http}`);
    }
    if (m.appview) {
      const proxy = req.headers["atproto-proxy"];
      if (proxy === undefined) {
        S.stats.missingProxy++;
        throw invalid("missing atproto-proxy header");
      }
      if (proxy !== PROXY) {
        S.stats.badProxy++;
        throw invalid("could not resolve proxy did service url");
      }
      authenticate(req, "access");
    }
    const out = m.fn(req, url.searchParams, body);
    if (out && out.body !== undefined && out.headers) return reply(res, 200, out.body, out.headers);
    return reply(res, 200, out);
  } catch (e) {
    if (!(e instanceof XrpcError)) {
      console.error(e);
      return reply(res, 500, { error: "InternalServerError", message: "Internal Server Error" });
    }
    return reply(res, e.status, { error: e.error, message: e.message }, e.headers);
  }
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (d) => chunks.push(d));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url, "http://x");
    if (url.pathname.startsWith("/xrpc/")) return xrpc(req, res, url, body);
    if (url.pathname.startsWith("/control/")) {
      let args = {};
      try {
        if (body) args = JSON.parse(body);
      } catch {
        return reply(res, 400, { error: "can't parse JSON" });
      }
      return control(req, res, url.pathname, args ?? {});
    }
    return reply(res, 404, { error: "NotFound", message: "Not Found" });
  });
});

const portArg = process.argv.indexOf("--port");
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : 0;
fresh();
server.listen(port, "127.0.0.1", () => {
  base = `http://127.0.0.1:${server.address().port}`;
  console.log(JSON.stringify({ port: server.address().port }));
});
process.on("SIGTERM", () => process.exit(0));
