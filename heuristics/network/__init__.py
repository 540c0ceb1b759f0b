"""Hand-written server policies of the data-centre network family (seed 003): :mod:`.rules`."""
