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

// Function-like macros Swift cannot import (pb_ prefix), for the TLS transport.
static inline int pb_ssl_set_sni(SSL *s, const char *name) { return (int)SSL_set_tlsext_host_name(s, name); }
static inline int pb_ctx_set_min_version(SSL_CTX *c, int v) { return (int)SSL_CTX_set_min_proto_version(c, v); }
static inline int pb_ctx_set_max_version(SSL_CTX *c, int v) { return (int)SSL_CTX_set_max_proto_version(c, v); }
static inline long pb_ctx_set_mode(SSL_CTX *c, long mode) { return SSL_CTX_set_mode(c, mode); }
static inline long pb_ctx_clear_mode(SSL_CTX *c, long mode) { return SSL_CTX_clear_mode(c, mode); }
static inline void pb_bio_set_retry_read(BIO *b) { BIO_set_retry_read(b); }
static inline void pb_bio_clear_retry(BIO *b) { BIO_clear_retry_flags(b); }
static inline long pb_bio_mem_data(BIO *b, char **p) { return BIO_get_mem_data(b, p); }
// Option and flag macros built from other macros.
static const uint64_t pb_ssl_op_no_compression = SSL_OP_NO_COMPRESSION;
static const uint64_t pb_ssl_op_no_renegotiation = SSL_OP_NO_RENEGOTIATION;
static const uint64_t pb_ssl_op_cipher_server_preference = SSL_OP_CIPHER_SERVER_PREFERENCE;
static const unsigned long pb_xn_flag_rfc2253_utf8 = XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB;
// ERR_SYSTEM_ERROR is a macro over the packed error code.
static inline int pb_err_is_system(unsigned long e) { return ERR_SYSTEM_ERROR(e) ? 1 : 0; }
#endif
