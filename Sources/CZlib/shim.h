// zlib bridge for HdrHistogram's V2 compressed encoding.
#ifndef PB_CZLIB_SHIM_H
#define PB_CZLIB_SHIM_H
#include <zlib.h>
#endif
