/* json_simd: simdjson's DOM parser, then a walk of its document building
 * jansson values (see json_simd.h). One parser and one padded copy of the
 * text per thread, sized for JSON_SIMD_MAX_LEN on first use and kept:
 * simdjson reads up to SIMDJSON_PADDING bytes past a text's end, which a
 * caller's buffer does not promise. No exception leaves this file: the
 * error-code interface is used throughout, and anything thrown (memory)
 * becomes NULL. */
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

json_t *build_object(dom::object o)
{
    json_t *obj = json_object();
    if (obj == nullptr)
        return nullptr;
    for (dom::key_value_pair kv : o) {
        std::string_view k = kv.key;
        size_t before = json_object_size(obj);
        /* jansson keeps keys as C strings: it refuses a NUL in one. A key
         * given twice replaces the first one's value: the size tells. */
        json_t *v = std::memchr(k.data(), '\0', k.size()) ? nullptr : build(kv.value);
        if (v == nullptr || json_object_setn_new_nocheck(obj, k.data(), k.size(), v) != 0 ||
            json_object_size(obj) == before) {
            json_decref(obj);
            return nullptr;
        }
    }
    return obj;
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

} // namespace

extern "C" json_t *json_simd_load(const char *text, size_t len)
{
    if (len > JSON_SIMD_MAX_LEN)
        return nullptr;
    try {
        reader *r = the_reader();
        if (r == nullptr)
            return nullptr;
        std::memcpy(r->text, text, len);
        std::memset(r->text + len, 0, SIMDJSON_PADDING);
        dom::element doc;
        if (r->parser.parse(r->text, len, false).get(doc) != SUCCESS)
            return nullptr;
        return build(doc);
    } catch (...) {
        return nullptr;
    }
}
