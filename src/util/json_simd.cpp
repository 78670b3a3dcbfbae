/* json_simd: simdjson's DOM parser, then a walk of its document building
 * jansson values (see json_simd.h). One parser and one padded copy of the
 * text per thread, sized for JSON_SIMD_MAX_LEN on first use and kept:
 * simdjson reads up to SIMDJSON_PADDING bytes past a text's end, which a
 * caller's buffer does not promise. With the JSON-RPC reading, the thread
 * also keeps the last JSON_SIMD_SHARED `params._meta` objects it built, and
 * a message carrying one equal to a kept one (compared on simdjson's
 * document: member order, types and bytes) gets that one, shared, instead
 * of a new tree. No exception leaves this file: the error-code interface is
 * used throughout, and anything thrown (memory) becomes NULL. */
#include "util/json_simd.h"

#include <cstring>
#include <memory>
#include <simdjson.h>

using namespace simdjson;

namespace
{

struct reader {
    dom::parser parser{JSON_SIMD_MAX_LEN};
    char text[JSON_SIMD_MAX_LEN + SIMDJSON_PADDING];
    json_t *shared[JSON_SIMD_SHARED] = {}; /* params._meta objects kept */
    unsigned next_shared = 0;              /* the one to replace next */
    ~reader()
    {
        for (json_t *v : shared)
            json_decref(v);
    }
};

/* The thread's reader (freed when the thread ends), or NULL when its
 * buffers could not be allocated. */
reader *the_reader()
{
    static thread_local std::unique_ptr<reader> r;
    static thread_local bool tried = false;
    if (!tried) {
        tried = true;
        r.reset(new (std::nothrow) reader);
        if (r && r->parser.allocate(JSON_SIMD_MAX_LEN, JSON_SIMD_MAX_DEPTH) != SUCCESS)
            r.reset();
    }
    return r.get();
}

json_t *build(dom::element e);

/* Object o as jansson's object, each member built by build, but the
 * member named key (keylen bytes; none when key is NULL), when it is an
 * object, built by inner. jansson keeps keys as C strings: it refuses a
 * NUL in one. A key given twice replaces the first one's value: the size
 * tells. */
template <typename F>
json_t *build_object_with(dom::object o, const char *key, size_t keylen, F inner)
{
    json_t *obj = json_object();
    if (obj == nullptr)
        return nullptr;
    for (dom::key_value_pair kv : o) {
        std::string_view k = kv.key;
        size_t before = json_object_size(obj);
        dom::object sub;
        json_t *v = std::memchr(k.data(), '\0', k.size()) ? nullptr
                    : key != nullptr && k.size() == keylen &&
                            std::memcmp(k.data(), key, keylen) == 0 && kv.value.get(sub) == SUCCESS
                        ? inner(sub)
                        : build(kv.value);
        if (v == nullptr || json_object_setn_new_nocheck(obj, k.data(), k.size(), v) != 0 ||
            json_object_size(obj) == before) {
            json_decref(obj);
            return nullptr;
        }
    }
    return obj;
}

json_t *build_object(dom::object o)
{
    return build_object_with(o, nullptr, 0, [](dom::object) -> json_t * { return nullptr; });
}

json_t *build(dom::element e)
{
    switch (e.type()) {
    case dom::element_type::OBJECT: {
        dom::object o;
        return e.get(o) == SUCCESS ? build_object(o) : nullptr;
    }
    case dom::element_type::ARRAY: {
        dom::array a;
        json_t *arr = e.get(a) == SUCCESS ? json_array() : nullptr;
        if (arr == nullptr)
            return nullptr;
        for (dom::element v : a) {
            if (json_array_append_new(arr, build(v)) != 0) {
                json_decref(arr);
                return nullptr;
            }
        }
        return arr;
    }
    case dom::element_type::STRING: {
        std::string_view s;
        /* simdjson has checked the UTF-8; a NUL is allowed in a value. */
        return e.get(s) == SUCCESS ? json_stringn_nocheck(s.data(), s.size()) : nullptr;
    }
    case dom::element_type::INT64: {
        int64_t i;
        return e.get(i) == SUCCESS ? json_integer((json_int_t)i) : nullptr;
    }
    case dom::element_type::DOUBLE: {
        double d;
        return e.get(d) == SUCCESS ? json_real(d) : nullptr;
    }
    case dom::element_type::BOOL: {
        bool b;
        return e.get(b) == SUCCESS ? json_boolean(b) : nullptr;
    }
    case dom::element_type::NULL_VALUE:
        return json_null();
    case dom::element_type::UINT64: /* past int64: jansson's caller reads it */
        return nullptr;
    }
    return nullptr;
}

bool same(dom::element e, const json_t *v);

/* True when o is the object v is: what build_object(o) would make, member
 * order, number types and bytes alike. */
bool same_object(dom::object o, const json_t *v)
{
    if (!json_is_object(v) || o.size() != json_object_size(v))
        return false;
    void *it = json_object_iter(const_cast<json_t *>(v));
    for (dom::key_value_pair kv : o) {
        std::string_view k = kv.key;
        if (it == nullptr || json_object_iter_key_len(it) != k.size() ||
            std::memcmp(json_object_iter_key(it), k.data(), k.size()) != 0 ||
            !same(kv.value, json_object_iter_value(it)))
            return false;
        it = json_object_iter_next(const_cast<json_t *>(v), it);
    }
    return true;
}

/* The same for any value. */
bool same(dom::element e, const json_t *v)
{
    switch (e.type()) {
    case dom::element_type::OBJECT: {
        dom::object o;
        return e.get(o) == SUCCESS && same_object(o, v);
    }
    case dom::element_type::ARRAY: {
        dom::array a;
        if (e.get(a) != SUCCESS || !json_is_array(v) || a.size() != json_array_size(v))
            return false;
        size_t i = 0;
        for (dom::element x : a)
            if (!same(x, json_array_get(v, i++)))
                return false;
        return true;
    }
    case dom::element_type::STRING: {
        std::string_view s;
        return e.get(s) == SUCCESS && json_is_string(v) && json_string_length(v) == s.size() &&
               std::memcmp(json_string_value(v), s.data(), s.size()) == 0;
    }
    case dom::element_type::INT64: {
        int64_t i;
        return e.get(i) == SUCCESS && json_is_integer(v) && json_integer_value(v) == i;
    }
    case dom::element_type::DOUBLE: {
        double d, w = json_real_value(v);
        return e.get(d) == SUCCESS && json_is_real(v) && std::memcmp(&d, &w, sizeof d) == 0;
    }
    case dom::element_type::BOOL: {
        bool b;
        return e.get(b) == SUCCESS && json_is_boolean(v) && json_is_true(v) == b;
    }
    case dom::element_type::NULL_VALUE:
        return json_is_null(v);
    case dom::element_type::UINT64:
        return false;
    }
    return false;
}

/* params._meta: a kept one equal to o (a new reference to it), else o
 * built and kept in place of the oldest. */
json_t *build_meta(reader *r, dom::object o)
{
    for (json_t *v : r->shared)
        if (v != nullptr && same_object(o, v))
            return json_incref(v);
    json_t *v = build_object(o);
    if (v != nullptr) {
        json_t *&slot = r->shared[r->next_shared++ % JSON_SIMD_SHARED];
        json_decref(slot);
        slot = json_incref(v);
    }
    return v;
}

/* The document of text[0..len) in the thread's reader, or false. */
bool parse(reader *r, const char *text, size_t len, dom::element *doc)
{
    std::memcpy(r->text, text, len);
    std::memset(r->text + len, 0, SIMDJSON_PADDING);
    return r->parser.parse(r->text, len, false).get(*doc) == SUCCESS;
}

/* The document of text[0..len) read in the thread's reader and handed
 * to how(reader, document), or NULL: too long, no reader, not read whole
 * by simdjson, or anything thrown (jansson then decides). */
template <typename How> json_t *load(const char *text, size_t len, How how)
{
    if (len > JSON_SIMD_MAX_LEN)
        return nullptr;
    try {
        reader *r = the_reader();
        dom::element doc;
        return r != nullptr && parse(r, text, len, &doc) ? how(r, doc) : nullptr;
    } catch (...) {
        return nullptr;
    }
}

/* A value of a JSON-RPC message's top level: params with a shared _meta,
 * the rest built whole. */
json_t *build_rpc_member(reader *r, std::string_view key, dom::element v)
{
    dom::object params;
    if (key != "params" || v.get(params) != SUCCESS)
        return build(v);
    return build_object_with(params, "_meta", 5,
                             [r](dom::object meta) { return build_meta(r, meta); });
}

} // namespace

extern "C" json_t *json_simd_load(const char *text, size_t len)
{
    return load(text, len, [](reader *, dom::element doc) { return build(doc); });
}

extern "C" json_t *json_simd_load_rpc(const char *text, size_t len)
{
    return load(text, len, [](reader *r, dom::element doc) {
        dom::object top;
        if (doc.get(top) != SUCCESS)
            return build(doc);
        return build_object_with(top, "params", 6, [r](dom::object params) {
            return build_object_with(params, "_meta", 5,
                                     [r](dom::object meta) { return build_meta(r, meta); });
        });
    });
}

extern "C" bool json_simd_load_members(const char *text, size_t len, const char *const *names,
                                       size_t n, json_t **out)
{
    if (n > JSON_SIMD_MEMBERS_MAX)
        return false;
    json_t *got[JSON_SIMD_MEMBERS_MAX] = {};
    /* load's result says only whether every member was read: the values
     * are in got until then. */
    json_t *read = load(text, len, [&](reader *r, dom::element doc) -> json_t * {
        dom::object top;
        if (doc.get(top) != SUCCESS)
            return nullptr;
        for (dom::key_value_pair kv : top) {
            std::string_view k = kv.key;
            size_t i = 0;
            while (i < n && k != names[i])
                i++;
            if (i == n || got[i] != nullptr ||
                (got[i] = build_rpc_member(r, k, kv.value)) == nullptr)
                return nullptr;
        }
        return json_true();
    });
    if (read == nullptr) {
        for (size_t i = 0; i < n; i++)
            json_decref(got[i]);
        return false;
    }
    json_decref(read);
    std::memcpy(out, got, n * sizeof *out);
    return true;
}
