/* Whole small files: reading one, and replacing one so that a reader sees the old
 * content or the new, never half of either. */
#ifndef LLMLAUNCH_FILE_H
#define LLMLAUNCH_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Read a whole small file (sysfs attributes, profiles). Trailing newline kept.
 * Returns 0 and a malloc'ed string, or -errno. `max` caps the size (-EFBIG); a
 * file holding a NUL byte is -EBADMSG. */
int ll_read_file(const char *path, size_t max, char **ret);
/* Read the first line of a file without its newline and trailing blanks. */
int ll_read_line(const char *path, char **ret);

/* Replace `path` with `len` bytes of `data`, mode `mode`: written to a temporary
 * file that mkostemp() creates in the same directory (O_EXCL, so nothing another
 * user planted is followed or reused), then renamed over `path` (rename replaces a
 * symlink planted at `path`, never what it points to). 0 or -errno; on failure
 * `path` is untouched and the temporary file is gone. */
int ll_file_replace(const char *path, const void *data, size_t len, mode_t mode);

#endif
