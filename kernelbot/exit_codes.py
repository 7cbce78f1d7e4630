"""Exit codes scripts can rely on (documented in the README and in `kernelbot --help`)."""

OK = 0  # done; for `eval`: the candidate passed every stage it was put through
USER_ERROR = 1  # bad path, flag, task or candidate file: one message on stderr
USAGE = 2  # the command line itself does not parse
CRASH = 3  # a kernelbot bug: a crash report was written, its path printed
REJECTED = 4  # `eval`: the candidate failed a stage (does not compile, wrong results, timing failure)
FLAGGED = 5  # `eval`: the candidate was caught by a hack check (or quarantined beyond the roofline)
INTERRUPTED = 130
