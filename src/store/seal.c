/* Sealing secrets at rest (seal.h). */
#include "seal.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/b64.h"
#include "../common/util.h"

struct seal_key {
    unsigned char k[crypto_secretbox_KEYBYTES];
};

#define SEAL_PREFIX "v1:"

static int read_all(int fd, unsigned char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

seal_key *seal_key_open(const char *path, bool make, jerr *e)
{
    if (sodium_init() < 0) {
        jerr_set(e, EIO, "libsodium cannot start");
        return NULL;
    }
    seal_key *k = xcalloc(1, sizeof *k);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != (off_t)sizeof k->k || st.st_uid != 0 ||
            (st.st_mode & 077) || read_all(fd, k->k, sizeof k->k) < 0) {
            close(fd);
            jerr_set(e, EINVAL, "%s: not joblet's secret key (a root-owned 0600 file of %zu bytes)", path,
                     sizeof k->k);
            goto fail;
        }
        close(fd);
        return k;
    }
    if (errno != ENOENT || !make) {
        jerr_sys(e, "open %s", path);
        goto fail;
    }
    crypto_secretbox_keygen(k->k);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, k->k, sizeof k->k) != (ssize_t)sizeof k->k || fsync(fd) < 0) {
        jerr_sys(e, "write %s", path);
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        goto fail;
    }
    close(fd);
    return k;
fail:
    seal_key_free(k);
    return NULL;
}

void seal_key_free(seal_key *k)
{
    if (k)
        sodium_memzero(k->k, sizeof k->k);
    free(k);
}

char *seal_text(const seal_key *k, const char *text)
{
    size_t n = strlen(text), blen = crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + n;
    unsigned char *box = xmalloc(blen);
    randombytes_buf(box, crypto_secretbox_NONCEBYTES);
    crypto_secretbox_easy(box + crypto_secretbox_NONCEBYTES, (const unsigned char *)text, n, box, k->k);
    char *b = b64_encode(box, blen);
    free(box);
    if (!b)
        abort();
    char *out = xmalloc(strlen(SEAL_PREFIX) + strlen(b) + 1);
    strcpy(stpcpy(out, SEAL_PREFIX), b);
    free(b);
    return out;
}

char *seal_open_text(const seal_key *k, const char *s, jerr *e)
{
    if (strncmp(s, SEAL_PREFIX, strlen(SEAL_PREFIX)) != 0) {
        jerr_set(e, EINVAL, "not a sealed value");
        return NULL;
    }
    size_t blen;
    unsigned char *box = b64_decode(s + strlen(SEAL_PREFIX), strlen(s + strlen(SEAL_PREFIX)), &blen);
    if (!box || blen < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES) {
        free(box);
        jerr_set(e, EINVAL, "a sealed value is damaged");
        return NULL;
    }
    size_t n = blen - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES;
    char *out = xmalloc(n + 1);
    if (crypto_secretbox_open_easy((unsigned char *)out, box + crypto_secretbox_NONCEBYTES,
                                   blen - crypto_secretbox_NONCEBYTES, box, k->k) != 0) {
        free(box);
        free(out);
        jerr_set(e, EINVAL, "a sealed value does not open with this state directory's key");
        return NULL;
    }
    free(box);
    out[n] = 0;
    return out;
}
