"""Running compute-sanitizer: locate, build the command, supervise, parse, classify."""
