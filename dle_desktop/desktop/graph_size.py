"""When a vault's graph gets a process of its own. Apart from `graph_process` (numpy, igraph):
the window reads it on its GUI thread to decide whether to start that process ahead."""

#: from this many entries the Graph's work runs in a child process (below it a thread is quicker
#: to start and the interpreter lock is held only briefly)
PROCESS_MIN_ENTRIES = 1500
