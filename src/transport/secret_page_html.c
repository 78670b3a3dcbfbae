/* secret_page_html: the pages' HTML and response headers (see
 * secret_page_html.h). */
#include "transport/secret_page_html.h"

#include <string.h>

#include "util/buf.h"

#define PAGE_HTML_MAX (128u * 1024) /* a rendered page */

/* On every response: nothing cached, no script, no frame, the form posts
 * only to this page. Referrer-Policy same-origin (rather than no-referrer,
 * under which browsers send "Origin: null" with the form's POST) keeps the
 * page's URL from leaking through the link while the POST keeps its
 * origin. */
static const struct {
    const char *name, *value;
} SECURITY_HEADERS[] = {
    {"cache-control", "no-store"},
    {"content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; form-action "
                                "'self'; frame-ancestors 'none'; base-uri 'none'"},
    {"x-frame-options", "DENY"},
    {"referrer-policy", "same-origin"},
    {"x-content-type-options", "nosniff"},
};

/* A page being written; the first failure sticks and the page is dropped. */
typedef struct html_s {
    buf_t b;
    int err;
} html_t;

static void html_raw(html_t *h, const char *s)
{
    if (h->err == 0)
        h->err = buf_append_str(&h->b, s);
}

/* Text, HTML-escaped (for element content and quoted attributes). */
static void html_text(html_t *h, const char *s)
{
    for (const char *p = s; *p && h->err == 0; p++) {
        switch (*p) {
        case '&':
            html_raw(h, "&amp;");
            break;
        case '<':
            html_raw(h, "&lt;");
            break;
        case '>':
            html_raw(h, "&gt;");
            break;
        case '"':
            html_raw(h, "&quot;");
            break;
        case '\'':
            html_raw(h, "&#39;");
            break;
        default:
            h->err = buf_append(&h->b, p, 1);
        }
    }
}

/* The document up to the heading; refresh (a path of this page, or NULL):
 * the browser GETs it again after a second (a meta refresh: no script,
 * which the CSP forbids). */
static void html_head(html_t *h, const char *title, const char *refresh)
{
    buf_init(&h->b, PAGE_HTML_MAX);
    h->err = 0;
    html_raw(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                "<meta name=\"robots\" content=\"noindex\">");
    if (refresh) {
        html_raw(h, "<meta http-equiv=\"refresh\" content=\"1; url=");
        html_text(h, refresh);
        html_raw(h, "\">");
    }
    html_raw(h, "<title>");
    html_text(h, title);
    html_raw(h, "</title><style>"
                "body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;"
                "padding:0 1rem;color:#1d1d1f;background:#fafafa}"
                "h1{font-size:1.4rem}.text{white-space:pre-line}"
                "input[type=password]{width:100%;box-sizing:border-box;padding:.6rem;"
                "font-size:1rem;border:1px solid #888;border-radius:6px}"
                "button{margin-top:1rem;padding:.55rem 1.4rem;font-size:1rem;border-radius:6px}"
                ".error{color:#b00020;font-weight:600}.note{color:#666;font-size:.85rem}"
                "</style></head><body>\n<h1>");
    html_text(h, title);
    html_raw(h, "</h1>\n");
}

/* The form; error (plain text) is shown above the field when not NULL. */
static void render_form(html_t *h, const secret_page_view_t *p, const char *error)
{
    html_head(h, p->title, NULL);
    html_raw(h, "<p class=\"text\">");
    html_text(h, p->text);
    html_raw(h, "</p>\n");
    if (p->link_url) {
        html_raw(h, "<p><a href=\"");
        html_text(h, p->link_url);
        html_raw(h, "\" target=\"_blank\" rel=\"noopener noreferrer\">");
        html_text(h, p->link_text ? p->link_text : p->link_url);
        html_raw(h, "</a></p>\n");
    }
    if (error) {
        html_raw(h, "<p class=\"error\" role=\"alert\">");
        html_text(h, error);
        html_raw(h, "</p>\n");
    }
    html_raw(h, "<form method=\"post\" action=\"");
    html_raw(h, p->path);
    html_raw(h, "\">\n<input type=\"password\" name=\"secret\" autocomplete=\"off\" aria-label=\"");
    html_text(h, p->title);
    html_raw(h, "\" required autofocus>\n<button type=\"submit\">Submit</button>\n</form>\n"
                "<p class=\"note\">This page is served by parley on this computer (127.0.0.1) "
                "and takes ");
    html_raw(h, p->verify ? "answers until one is accepted." : "one answer.");
    html_raw(h, "</p>\n</body></html>\n");
}

/* A page with a title and one line of text. */
static void render_message(html_t *h, const char *title, const char *message)
{
    html_head(h, title, NULL);
    html_raw(h, "<p>");
    html_text(h, message);
    html_raw(h, "</p>\n</body></html>\n");
}

/* Sends h (or a bare 500 when writing it failed) and frees it. */
static void send_html(h2o_req_t *req, int status, const char *reason, html_t *h)
{
    if (h->err != 0) {
        buf_reset(&h->b);
        status = 500;
        reason = "Internal Server Error";
    }
    req->res.status = status;
    req->res.reason = reason;
    for (size_t i = 0; i < sizeof SECURITY_HEADERS / sizeof SECURITY_HEADERS[0]; i++)
        h2o_add_header_by_str(&req->pool, &req->res.headers, SECURITY_HEADERS[i].name,
                              strlen(SECURITY_HEADERS[i].name), 1, NULL, SECURITY_HEADERS[i].value,
                              strlen(SECURITY_HEADERS[i].value));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("text/html; charset=utf-8"));
    req->res.content_length = h->b.len;
    h2o_send_inline(req, h->b.data ? h->b.data : "", h->b.len);
    buf_free(&h->b);
}

bool secret_page__send_message(h2o_req_t *req, int status, const char *reason, const char *title,
                               const char *message)
{
    html_t h;
    render_message(&h, title, message);
    bool rendered = h.err == 0;
    send_html(req, status, reason, &h);
    return rendered;
}

void secret_page__send_checking(h2o_req_t *req, int status, const char *reason,
                                const secret_page_view_t *p)
{
    html_t h;
    html_head(&h, p->title, p->path);
    html_raw(&h, "<p role=\"status\">Checking\xe2\x80\xa6 this page shows the answer in a "
                 "moment.</p>\n</body></html>\n");
    send_html(req, status, reason, &h);
}

void secret_page__send_form(h2o_req_t *req, int status, const char *reason,
                            const secret_page_view_t *p, const char *error)
{
    html_t h;
    render_form(&h, p, error);
    send_html(req, status, reason, &h);
}
