// PushMetrics module: see design.md "Layout".
