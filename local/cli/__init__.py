"""`nexttick`: the command line. `format` renders tasks for people, `target` resolves where a command
points (the local stack or AWS), `commands` runs each command, `main` parses and reports failures."""
