-- telegram/groups: the telegram toolset's group tools; administration needs
-- the connector (src/toolsets/telegram/ runs it there).

CREATE OR REPLACE FUNCTION parley_tg_groups_list(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT parley_tg_chats_page(a, 100, 500, 'groups', '{group,supergroup,forum,channel}', true,
                                a ->> 'query')
$$;

CREATE OR REPLACE FUNCTION parley_tg_groups_info(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    RETURN (SELECT parley_tg_chat_info_json(c) || jsonb_build_object(
                'topicCount', (SELECT count(*) FROM topics t WHERE t.chat_id = c.id),
                'members', coalesce((SELECT jsonb_agg(jsonb_build_object('userId', cm.user_id,
                                         'status', cm.status) ORDER BY cm.user_id)
                                     FROM chat_members cm WHERE cm.chat_id = c.id), '[]'),
                'activeSenders', coalesce((
                    SELECT jsonb_agg(jsonb_build_object('senderId', s.sender_id, 'name', s.name,
                                                        'messages', s.n) ORDER BY s.n DESC)
                    FROM (SELECT m.sender_id, max(m.sender_name) AS name, count(*) AS n
                          FROM messages m WHERE m.chat_id = c.id AND m.sender_id IS NOT NULL
                          GROUP BY m.sender_id ORDER BY count(*) DESC LIMIT 20) s), '[]'))
            FROM chats c WHERE c.id = chat);
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_groups_rename(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('groupsRename',
        'groupsInfo and groupsList show what the archive holds about groups');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_groups_members_add(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('groupsMembersAdd',
        'groupsInfo and groupsList show what the archive holds about groups');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_groups_members_remove(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('groupsMembersRemove',
        'groupsInfo and groupsList show what the archive holds about groups');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_groups_invite_link_get(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('groupsInviteLinkGet',
        'groupsInfo and groupsList show what the archive holds about groups');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_groups_invite_link_revoke(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('groupsInviteLinkRevoke',
        'groupsInfo and groupsList show what the archive holds about groups');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_groups_join(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('groupsJoin',
        'groupsInfo and groupsList show what the archive holds about groups');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_groups_leave(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('groupsLeave',
        'groupsInfo and groupsList show what the archive holds about groups');
END
$$;
