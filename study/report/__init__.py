"""A study's report: one self-contained HTML file, and its figures and tables as files.

``data`` gathers the sections from the analysis wing, ``content`` says what each shows,
``draw`` draws the figures with matplotlib (imported only when drawing), ``html`` writes
the document and ``files`` writes it all without leaving anything half-written.
"""
