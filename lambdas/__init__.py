"""Lambda entry points: thin handlers over the nexttick library."""
