"""The text model: buffers (:mod:`.document`), operational transforms (:mod:`.transform`), the
client-side replica (:mod:`.replica`), the journal that makes acknowledged edits durable
(:mod:`.journal`, :mod:`.journal_store`, :mod:`.buffer_state`), edit commands, highlighting
and the UTF-16 column seam. Pure logic: no sockets, threads or Tk."""
