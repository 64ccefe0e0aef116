"""Rio's messages: frames and their limits (:mod:`.frames`), the op catalogue with typed
arguments (:mod:`.ops`), the error tree every failure is a leaf of (:mod:`.errors`) and the
client roles (:mod:`.roles`). docs/protocol.md is the reference."""
