/* SHA-256 of bytes and of a whole directory tree (digest.c, with nettle). A runtime's
 * manifest carries both: the recipe's hash (the cache key) and the tree's (what an imported
 * archive is checked against). Linked into joblet and its build helper, not into rnx. */
#ifndef JOBLET_DIGEST_H
#define JOBLET_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define DIGEST_HEX 65   /* 64 hex digits and a NUL */

void digest_sha256_hex(const void *data, size_t len, char out[DIGEST_HEX]);
/* A whole file's hash; -1 with e set when it cannot be read. */
int digest_file(const char *path, char out[DIGEST_HEX], jerr *e);

/* The hash of a tree: every entry under root in byte order of names, each as a header
 * "<type> <mode> <uid> <gid> <path>\n" (type f, d, l, c, b, p, s; mode octal permission bits;
 * path relative, starting with "./") followed for a file by its size and contents, for a link
 * by its target, for a device by "major:minor". Times and extended attributes are not part of
 * it (archives do not all keep them). Symlinks are never followed. Also returns the disk use
 * of the tree in bytes (blocks, hard links counted once) and the number of entries. */
typedef struct digest_tree_info {
    uint64_t disk_bytes;
    uint64_t entries;
} digest_tree_info;
int digest_tree(const char *root, char out[DIGEST_HEX], digest_tree_info *info, jerr *e);

#endif
