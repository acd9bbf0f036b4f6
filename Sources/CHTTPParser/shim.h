// libhttp-parser bridge (Debian's libhttp-parser-dev 2.9: the HTTP/1.1 request parser Node.js used for years).
#ifndef PB_CHTTPPARSER_SHIM_H
#define PB_CHTTPPARSER_SHIM_H
#include <http_parser.h>

// The parser's state is C bit-fields and its error a macro: read them here, one call each, so the
// Swift side never goes through imported bit-field accessors on the per-request path.
static inline unsigned pb_hp_errno(const http_parser *p) { return p->http_errno; }
static inline unsigned pb_hp_method(const http_parser *p) { return p->method; }
static inline unsigned pb_hp_status(const http_parser *p) { return p->status_code; }
static inline unsigned pb_hp_http_minor(const http_parser *p) { return p->http_minor; }
static inline uint64_t pb_hp_content_length(const http_parser *p) { return p->content_length; }
static inline int pb_hp_is_chunked(const http_parser *p) { return (p->flags & F_CHUNKED) != 0; }
static inline int pb_hp_has_content_length(const http_parser *p) { return (p->flags & F_CONTENTLENGTH) != 0; }
static inline void pb_hp_set_data(http_parser *p, void *data) { p->data = data; }
static inline void *pb_hp_data(const http_parser *p) { return p->data; }
#endif
