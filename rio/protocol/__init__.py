"""Rio's messages: frames and their limits (:mod:`.frames`), the op catalogue with typed
arguments (:mod:`.ops`), the event catalogue with typed fields (:mod:`.events`), the error tree
every failure is a leaf of (:mod:`.errors`) and the client roles (:mod:`.roles`), the routing
rules the prefix alone does not say (:mod:`.routing`) and the op tables that send an op to the
method serving it (:mod:`.op_table`), and a tool call's input on one line as both clients show
it (:mod:`.tool_input`). docs/protocol.md is the reference."""
