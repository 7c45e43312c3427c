"""Reading response files: table formats, cells and the id and text columns."""
