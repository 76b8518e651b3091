"""`make bench`: nexttick measured side by side with its baselines; results written to bench/."""
