// libnghttp2 bridge (1.52: original API, ssize_t callbacks; no *2 functions).
#ifndef PB_CNGHTTP2_SHIM_H
#define PB_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>

// nghttp2_frame is a C union; these read the members Swift would otherwise reach through unsafe rebinding.
static inline uint8_t pb_frame_type(const nghttp2_frame *f) { return f->hd.type; }
static inline uint8_t pb_frame_flags(const nghttp2_frame *f) { return f->hd.flags; }
static inline size_t pb_frame_length(const nghttp2_frame *f) { return f->hd.length; }
static inline int32_t pb_frame_stream_id(const nghttp2_frame *f) { return f->hd.stream_id; }
static inline nghttp2_headers_category pb_frame_headers_category(const nghttp2_frame *f) { return f->headers.cat; }
static inline int32_t pb_frame_goaway_last_stream_id(const nghttp2_frame *f) { return f->goaway.last_stream_id; }
static inline uint32_t pb_frame_goaway_error_code(const nghttp2_frame *f) { return f->goaway.error_code; }
static inline const uint8_t *pb_frame_goaway_data(const nghttp2_frame *f) { return f->goaway.opaque_data; }
static inline size_t pb_frame_goaway_data_len(const nghttp2_frame *f) { return f->goaway.opaque_data_len; }
static inline size_t pb_frame_data_padlen(const nghttp2_frame *f) { return f->data.padlen; }
#endif
