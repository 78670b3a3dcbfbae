/* pb_simdjson: the one-file C shim over simdjson (libsimdjson-dev, C++):
 * its DOM parser (one reused parser, as parleyd's one loop would keep),
 * then a walk of the document feeding the sink. simdjson refuses by
 * itself: JSON's grammar, numbers by the grammar (and a real that
 * overflows), invalid UTF-8 anywhere in the input, a raw control
 * character or a malformed escape in a string, and nesting past its
 * max_depth (set here to jansson's 2048). It refuses a lone surrogate escape too.
 * It does not refuse a key given twice or a NUL in a key: the sink does. An integer past 64 bits is
 * an error to simdjson 3.0.1 (NUMBER_ERROR, as is a real that overflows), one past int64 within
 * uint64 a UINT64: for either the path falls back to jansson's, which reads the message as
 * parleyd's jsonrpc_parse does (every number a real, the integral ones within +-2^53 integers
 * again) or refuses it. The input must be followed by SIMDJSON_PADDING readable bytes (PB_PADDING):
 * parleyd's read buffers would have to keep that slack, else simdjson copies the message. */
#include <simdjson.h>

#include "parse_bench.h"

using namespace simdjson;

static_assert(SIMDJSON_PADDING <= PB_PADDING, "inputs are padded for simdjson");

static dom::parser &the_parser()
{
    static dom::parser p;
    static bool ready = p.allocate(1 << 16, PB_MAX_DEPTH) == SUCCESS;
    (void)ready;
    return p;
}

static int walk(pb_sink_t *k, dom::element e)
{
    switch (e.type()) {
    case dom::element_type::OBJECT: {
        if (pb_sink_start_map(k) != 0)
            return -1;
        for (dom::key_value_pair kv : dom::object(e))
            if (pb_sink_key(k, kv.key.data(), kv.key.size(), true) != 0 || walk(k, kv.value) != 0)
                return -1;
        return pb_sink_end_map(k);
    }
    case dom::element_type::ARRAY: {
        if (pb_sink_start_array(k) != 0)
            return -1;
        for (dom::element v : dom::array(e))
            if (walk(k, v) != 0)
                return -1;
        return pb_sink_end_array(k);
    }
    case dom::element_type::STRING: {
        std::string_view s(e);
        return pb_sink_string(k, s.data(), s.size(), true);
    }
    case dom::element_type::INT64:
        return pb_sink_integer(k, int64_t(e));
    case dom::element_type::UINT64: /* past int64: jansson's to read */
        k->too_big = true;
        return -1;
    case dom::element_type::DOUBLE:
        return pb_sink_real(k, double(e));
    case dom::element_type::BOOL:
        return pb_sink_bool(k, bool(e));
    case dom::element_type::NULL_VALUE:
        return pb_sink_null(k);
    }
    return -1;
}

extern "C" int pb_simdjson_parse(const char *text, size_t len, pb_request_t *r)
{
    dom::element doc;
    error_code err = the_parser().parse(text, len, false).get(doc);
    if (err == NUMBER_ERROR) /* a number past 64 bits, or one jansson refuses too */
        return pb_jansson_parse(text, len, r);
    if (err != SUCCESS)
        return -1;
    pb_sink_t k;
    pb_sink_init(&k, r);
    int rc = walk(&k, doc);
    pb_sink_free(&k);
    if (rc != 0 && k.too_big) {
        pb_request_release(r);
        return pb_jansson_parse(text, len, r);
    }
    return rc;
}

extern "C" int pb_simdjson_alone(const char *text, size_t len)
{
    dom::element doc;
    return the_parser().parse(text, len, false).get(doc) == SUCCESS ? 0 : -1;
}
