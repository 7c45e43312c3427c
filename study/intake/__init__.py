"""Reading response files: table formats, cells and the id and text columns.

Other rooms read responses through the package ``study`` (``read_responses``,
``ResponseTable``). ``responses``, ``tables``, ``cells`` and ``columns`` are also read by
other wings of ``study``; ``_formats`` is the wing's own.
"""
