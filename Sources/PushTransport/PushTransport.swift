// PushTransport module: see design.md "Layout".
