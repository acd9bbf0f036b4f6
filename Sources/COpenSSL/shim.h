// OpenSSL 3 bridge (Debian's libssl-dev): TLS with memory BIOs, ALPN, X.509, ECDSA/RSA signatures.
#ifndef PB_COPENSSL_SHIM_H
#define PB_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/rsa.h>
#include <openssl/rand.h>
#endif
