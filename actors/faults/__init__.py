"""Fault injection: inside an instance (:mod:`.injection`, :mod:`.journal`) and the ``rio faults``
harness that drives one (:mod:`.harness`, :mod:`.instances`, :mod:`.workload`, :mod:`.resend`)."""
