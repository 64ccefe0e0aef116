"""Find / Replace and Go to line: the dialog (:mod:`.dialog`) over its display-free half
(:mod:`.model`)."""
