// Who holds a lock on a SQLite file, for the message of a read or write that waited past its busy
// timeout: SQLite's locks are POSIX record locks on fixed bytes of the database file (the pending
// byte at 1 GiB, the reserved byte after it, then the shared range), so the kernel's lock table
// (/proc/locks on Linux) names the process and the kind of lock without touching the file. (A
// probe with fcntl(F_GETLK) would need a descriptor of the file, and closing it would drop every
// POSIX lock this process holds on it, its own SQLite connections' included.)
#pragma once

#include <string>

namespace batchlab::results {

// What holds the database at `db_path` locked, e.g. "process 4242 holds an exclusive lock on it (a
// write in progress)"; several holders are joined with "; ". Empty when the lock table names none
// (the lock is gone, is held in another way, or /proc/locks cannot be read).
std::string describe_lock_holders(const std::string& db_path);

}  // namespace batchlab::results
