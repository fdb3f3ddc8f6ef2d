// grading/file_guard.hpp — a graded submission may not touch the file system.
//
// A variant reads its inputs and writes its outputs through the harness's
// buffers; it has no business creating, changing, renaming or removing files.
// block_file_writes() installs a seccomp filter on the calling process (and
// every thread and child it starts later) that traps each system call which
// would: open or openat with a write, create, truncate or append flag; creat,
// truncate, rename*, unlink*, mkdir*, rmdir, link*, symlink*, mknod*, chmod*,
// chown*, utime*; and openat2 and io_uring_setup, whose arguments a filter
// cannot inspect. The trap handler makes the call fail with EACCES — the code
// goes on as if the file system had said no, and nothing is written — and
// writes one JSON line {"event": "blocked_write", ...} on `report_fd`, so the
// grader reports the attempt. Files already open (the captured stdout and
// stderr, the result file) stay writable; the output-size limit bounds them.
// Reading files is not restricted.
//
// x86-64 and AArch64 only; elsewhere it returns why it could not.
#pragma once

#include <string>

namespace convlab::grading {

// "" when the filter is in place, otherwise why not (the caller reports it).
std::string block_file_writes(int report_fd);

// How many calls the filter has refused so far in this process.
int blocked_write_count();

}  // namespace convlab::grading
