"""The project's files: confined paths (:mod:`.workspace`, :mod:`.nofollow`), atomic saves
(:mod:`.atomic`), decoding and encodings (:mod:`.files`), ignore rules, search and find in files,
and the ``fs.*`` ops (:mod:`.fs_ops`)."""
