// MockGateway module: see design.md "Layout".
