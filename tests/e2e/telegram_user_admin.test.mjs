// A Telegram user account administering chats, against the fake libtdjson
// (tests/support/fake_tdjson_admin.c) through the official SDK client:
// groupsInfo's live part and channelsMetadataRefresh (chat_info: getChat,
// the full infos, getChatAdministrators, in the Bot API's shapes), rename,
// reading and revoking invite links, adding members (one the user's privacy
// keeps out), removing them, joining by invite link and by username (and a
// join that waits for approval), leaving; TDLib's refusals (400
// CHAT_ADMIN_REQUIRED, INVITE_HASH_INVALID, a 429 FloodWait) answer in
// words.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { call, dropAccounts, haveFake, refused, tgAccount, tgLogin, tgServe, until } from "./tg_user_lib.mjs";

const ME = 777000111;
const BOB = 42, CAROL = 43, DAVE = 44, EVE = 45;
const TEAM = -4001;
const BIG = -1001234567890;
const RO = -1002222222222;
const JOINABLE = -1003333333333;
const PUBLIC = -1004444444444;
const script = {
  phone: "+15550002",
  code: "24680",
  user: { id: ME, first_name: "Ada", last_name: "Lovelace", username: "ada", phone_number: "15550002" },
  users: [
    { id: BOB, first_name: "Bob", username: "bob" },
    { id: CAROL, first_name: "Carol", last_name: "Moderator", username: "carol" },
    { id: DAVE, first_name: "Dave", privacy_restricted: true },
    { id: EVE, first_name: "Eve" },
  ],
  chats: [
    { id: BOB, type: "private", user_id: BOB, title: "Bob", messages: 3 },
    { id: TEAM, type: "basic_group", title: "Team", messages: 3, senders: [BOB, ME],
      description: "the team", invite_link: "https://t.me/+teamlink" },
    { id: BIG, type: "supergroup", title: "Big group", username: "biggroup", messages: 5,
      senders: [BOB, CAROL], description: "A big group",
      admins: [{ user_id: ME, is_owner: true }, { user_id: CAROL, custom_title: "mod" }] },
    { id: RO, type: "supergroup", title: "Read only", messages: 2, senders: [BOB], admin: false },
  ],
  // The second unban (setChatMemberStatus left) answers 429.
  flood_wait: { method: "setChatMemberStatus", after_calls: 1, seconds: 30 },
  joinable: [
    { id: JOINABLE, type: "supergroup", title: "Joinable", invite_link: "https://t.me/+JoinMe123", senders: [EVE] },
    { id: PUBLIC, type: "channel", title: "Public news", username: "publicnews" },
    { id: -1005555555555, type: "supergroup", title: "Closed club", invite_link: "https://t.me/+AskFirst", join_request: true },
  ],
};

let d, c, psql;

before(async () => {
  haveFake();
  const a = tgAccount(script, { apiHash: "0123456789abcdef-admin" });
  psql = a.psql;
  const l = await tgLogin(a, "24680\n");
  assert.equal(l.code, 0, l.err);
  ({ d, c } = await tgServe(a));
  // The chats and the users stored: the tools resolve ids in the archive.
  await until("the chats and users", () =>
    psql(`SELECT count(*) FROM chats WHERE id IN (${BOB}, ${TEAM}, ${BIG}, ${RO})`) === "4" &&
    psql(`SELECT count(*) FROM users WHERE id IN (${BOB}, ${CAROL}, ${DAVE}, ${EVE})`) === "4");
});

after(async () => {
  if (d) assert.equal(await d.stop(), 0);
  dropAccounts();
});

test("groupsInfo: the chat, its member count and administrators as TDLib has them, in the Bot API's shapes", async () => {
  const big = await call(c, "groupsInfo", { channelId: BIG });
  assert.equal(big.liveError, undefined, JSON.stringify(big.liveError));
  assert.deepEqual(big.live.chat, {
    id: BIG, type: "supergroup", title: "Big group", username: "biggroup", description: "A big group",
  });
  assert.equal(big.live.memberCount, 3);
  assert.deepEqual(big.live.administrators, [
    { status: "creator", can_be_edited: false, user: { id: ME, is_bot: false, first_name: "Ada", last_name: "Lovelace", username: "ada" } },
    { status: "administrator", can_be_edited: false, custom_title: "mod",
      user: { id: CAROL, is_bot: false, first_name: "Carol", last_name: "Moderator", username: "carol" } },
  ]);

  const team = await call(c, "groupsInfo", { channelId: TEAM });
  assert.deepEqual(team.live.chat, { id: TEAM, type: "group", title: "Team", description: "the team" });
  assert.equal(team.live.memberCount, 2);

  // channelsMetadataRefresh stores what chat_info answers (a private chat's
  // name from its user).
  const rf = await call(c, "channelsMetadataRefresh", { channelIds: [BIG, BOB], force: true });
  assert.deepEqual(rf.failed, []);
  assert.equal(psql(`SELECT about || ':' || member_count || ':' || username FROM chats WHERE id = ${BIG}`), "A big group:3:biggroup");
  assert.equal(psql(`SELECT title || ':' || username FROM chats WHERE id = ${BOB}`), "Bob:bob");
});

test("rename and invite links", async () => {
  const r = await call(c, "groupsRename", { channelId: BIG, name: "Bigger group" });
  assert.deepEqual(r, { channelId: BIG, name: "Bigger group" });
  await until("the new title stored", () => psql(`SELECT title FROM chats WHERE id = ${BIG}`) === "Bigger group");

  // The user account reads the primary link without replacing it.
  const got = await call(c, "groupsInviteLinkGet", { channelId: TEAM });
  assert.deepEqual(got, { channelId: TEAM, inviteLink: "https://t.me/+teamlink", previousRevoked: false });
  const revoked = await call(c, "groupsInviteLinkRevoke", { channelId: TEAM });
  assert.match(revoked.inviteLink, /^https:\/\/t\.me\/\+fake4001x\d+$/);
  assert.equal(revoked.previousRevoked, true);
  const again = await call(c, "groupsInviteLinkGet", { channelId: TEAM });
  assert.equal(again.inviteLink, revoked.inviteLink, "reading the link does not replace it");
});

test("adding and removing members", async () => {
  const added = await call(c, "groupsMembersAdd", { channelId: BIG, userIds: [EVE, DAVE] });
  assert.equal(added.channelId, BIG);
  assert.deepEqual(added.added, [EVE]);
  assert.equal(added.failed.length, 1);
  assert.equal(added.failed[0].userId, DAVE);
  assert.match(added.failed[0].error, /privacy settings do not allow adding them/);
  assert.equal((await call(c, "groupsInfo", { channelId: BIG })).live.memberCount, 4);

  // Again: TDLib's refusal for that user, in words.
  const twice = await call(c, "groupsMembersAdd", { channelId: BIG, userIds: [EVE] });
  assert.deepEqual(twice.added, []);
  assert.match(twice.failed[0].error, /USER_ALREADY_PARTICIPANT.*already a member/);

  const removed = await call(c, "groupsMembersRemove", { channelId: BIG, userIds: [EVE] });
  assert.deepEqual(removed.removed, [EVE]);
  assert.deepEqual(removed.failed, []);
  assert.equal((await call(c, "groupsInfo", { channelId: BIG })).live.memberCount, 3);
  // Removed, not banned: the user may be added again.
  assert.deepEqual((await call(c, "groupsMembersAdd", { channelId: BIG, userIds: [EVE] })).added, [EVE]);

  const fromTeam = await call(c, "groupsMembersRemove", { channelId: TEAM, userIds: [BOB] });
  assert.deepEqual(fromTeam.removed, [BOB]);
  assert.equal((await call(c, "groupsInfo", { channelId: TEAM })).live.memberCount, 1);
});

test("joining by invite link and by username, a join waiting for approval, leaving", async () => {
  const j = await call(c, "groupsJoin", { invite: "https://t.me/+JoinMe123" });
  assert.deepEqual(j, { channelId: JOINABLE, type: "supergroup", title: "Joinable", joined: true });
  await until("the joined chat stored", () => psql(`SELECT title FROM chats WHERE id = ${JOINABLE}`) === "Joinable");

  const p = await call(c, "groupsJoin", { invite: "@publicnews" });
  assert.deepEqual(p, { channelId: PUBLIC, type: "channel", title: "Public news", username: "publicnews", joined: true });
  assert.equal((await call(c, "groupsJoin", { invite: "t.me/publicnews" })).channelId, PUBLIC);

  const ask = await call(c, "groupsJoin", { invite: "t.me/joinchat/AskFirst" });
  assert.deepEqual(ask, { joined: false, requested: true, invite: "t.me/joinchat/AskFirst" });

  assert.match(await refused(c, "groupsJoin", { invite: "not a link!" }),
    /invite: give an invite link \(https:\/\/t\.me\/\+HASH/);
  assert.match(await refused(c, "groupsJoin", { invite: "https://t.me/+Nope" }),
    /groupsJoin failed: Telegram refused \(error 400 INVITE_HASH_INVALID\): the invite link is not valid/);
  assert.match(await refused(c, "groupsJoin", { invite: "@nobodyhere" }),
    /USERNAME_NOT_OCCUPIED\): no public chat has this username/);

  assert.deepEqual(await call(c, "groupsLeave", { channelId: JOINABLE }), { channelId: JOINABLE, left: true });
  // Left: administering it is refused now.
  assert.match(await refused(c, "groupsRename", { channelId: JOINABLE, name: "x" }), /CHAT_ADMIN_REQUIRED/);
});

test("TDLib's refusal answers isError with its reason in words", async () => {
  const t = await refused(c, "groupsRename", { channelId: RO, name: "Mine now" });
  assert.match(t, /groupsRename failed: Telegram refused \(error 400 CHAT_ADMIN_REQUIRED\): the account is not an administrator of this chat/);
  assert.match(await refused(c, "groupsInviteLinkRevoke", { channelId: RO }), /CHAT_ADMIN_REQUIRED/);
  // Per user, removing and adding say why each failed.
  const rm = await call(c, "groupsMembersRemove", { channelId: RO, userIds: [BOB] });
  assert.deepEqual(rm.removed, []);
  assert.match(rm.failed[0].error, /CHAT_ADMIN_REQUIRED\): the account is not an administrator/);
  // A FloodWait says how long; a removal whose unban failed says the user
  // stays banned.
  const fw = await call(c, "groupsMembersRemove", { channelId: BIG, userIds: [CAROL] });
  assert.deepEqual(fw.removed, []);
  assert.match(fw.failed[0].error,
    /removed but stays banned .*Telegram asks to wait 30 seconds before trying again \(FloodWait/);
  // Reading a chat it is not an admin of still works.
  const info = await call(c, "groupsInfo", { channelId: RO });
  assert.equal(info.live.chat.title, "Read only");
  assert.deepEqual(info.live.administrators, []);
  assert.equal(psql(`SELECT title FROM chats WHERE id = ${RO}`), "Read only");
});
