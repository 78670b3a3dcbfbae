/* secret_page_html: what the one-time pages of secret_page.h send: the
 * HTML of the form, of "Checking" (a page that reloads itself) and of a
 * one-line message, every text HTML-escaped, with the security headers
 * every response carries. Internal to secret_page.c (secret_page__). */
#ifndef PARLEY_TRANSPORT_SECRET_PAGE_HTML_H
#define PARLEY_TRANSPORT_SECRET_PAGE_HTML_H

#include <h2o.h>
#include <stdbool.h>

/* What a page shows (borrowed for the call). */
typedef struct secret_page_view_s {
    const char *title, *text;
    const char *link_url, *link_text; /* NULL: no link; link_text NULL: the URL */
    const char *path;                 /* the page's path, where the form posts */
    bool verify;                      /* takes answers until one is accepted */
} secret_page_view_t;

/* Each sends the whole response at once (h2o_send_inline); a page that
 * could not be written is a bare 500 instead (send_message then returns
 * false). */
bool secret_page__send_message(h2o_req_t *req, int status, const char *reason, const char *title,
                               const char *message);
void secret_page__send_checking(h2o_req_t *req, int status, const char *reason,
                                const secret_page_view_t *v);
/* The form; error (plain text, or NULL) above the field. */
void secret_page__send_form(h2o_req_t *req, int status, const char *reason,
                            const secret_page_view_t *v, const char *error);

#endif
