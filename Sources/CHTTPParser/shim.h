// libhttp-parser bridge (Debian's libhttp-parser-dev 2.9: the HTTP/1.1 request parser Node.js used for years).
#ifndef PB_CHTTPPARSER_SHIM_H
#define PB_CHTTPPARSER_SHIM_H
#include <http_parser.h>
#endif
