// LoadGenerator module: see design.md "Layout".
