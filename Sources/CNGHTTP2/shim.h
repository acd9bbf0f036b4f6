// libnghttp2 bridge (1.52: original API, ssize_t callbacks; no *2 functions).
#ifndef PB_CNGHTTP2_SHIM_H
#define PB_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#endif
