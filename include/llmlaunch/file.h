/* Whole small files: reading one, and replacing one so that a reader sees the old
 * content or the new, never half of either. */
#ifndef LLMLAUNCH_FILE_H
#define LLMLAUNCH_FILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Open `path` for reading, only if it is a regular file: opened with O_NONBLOCK
 * (a FIFO without a writer cannot make open() wait) and checked with fstat() on
 * the descriptor itself, so nothing can be swapped in between. `flags` adds open
 * flags (O_NOFOLLOW). Returns the descriptor (O_NONBLOCK still set, harmless on
 * a regular file) with *ret_st filled when given, -EISDIR for a directory, -EINVAL
 * for anything else that is not a regular file (FIFO, socket, device), or -errno. */
int ll_open_regular(const char *path, int flags, struct stat *ret_st);

/* What a -errno of the readers below means, for messages: "not a regular file (a
 * FIFO, socket or device)" for -EINVAL, "too large", ..., else strerror(). */
const char *ll_file_strerror(int r);

/* Read fd to its end, at most `max` bytes (-EFBIG beyond). *ret is malloc'ed and
 * NUL-terminated; *ret_len (optional) is the true length, NUL bytes included. */
int ll_read_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* Read a whole regular file (ll_open_regular): profiles, snapshots, sysfs and /proc
 * values. `max` caps the size (-EFBIG, checked on the size fstat() reports before
 * reading, and on what is read). *ret_len: the true length, NUL bytes included. */
int ll_read_file_n(const char *path, size_t max, char **ret, size_t *ret_len);

/* ll_read_file_n() for text: trailing newline kept, a file holding a NUL byte is
 * -EBADMSG. Returns 0 and a malloc'ed string, or -errno. */
int ll_read_file(const char *path, size_t max, char **ret);
/* Read the first line of a file without its newline and trailing blanks. */
int ll_read_line(const char *path, char **ret);

/* Replace `path` with `len` bytes of `data`, mode `mode`: written to a temporary
 * file that mkostemp() creates in the same directory (O_EXCL, so nothing another
 * user planted is followed or reused), then renamed over `path` (rename replaces a
 * symlink planted at `path`, never what it points to). 0 or -errno; on failure
 * `path` is untouched and the temporary file is gone. */
int ll_file_replace(const char *path, const void *data, size_t len, mode_t mode);

/* Out of descriptors or memory is no answer about a file: a reader that fails so
 * (-EMFILE, -ENFILE, -ENOMEM) notes it here, and whoever must not take the failure
 * for "absent" (the probe) asks afterwards. ll_io_resource_note() keeps the first
 * such error; ll_io_resource_take() returns it (0: none) and forgets it. The readers
 * of this file note theirs themselves. One process-wide record: the probe runs in
 * one thread. */
void ll_io_resource_note(int r);
int ll_io_resource_take(void);
/* The same inside the directory `dirfd` (NAME must not contain '/'): the temporary
 * file is created there with O_EXCL | O_NOFOLLOW, so nothing already at its name,
 * a planted link above all, is followed or reused. 0 or -errno. */
int ll_file_replace_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode);

#endif
