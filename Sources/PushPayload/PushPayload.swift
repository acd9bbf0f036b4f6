// PushPayload module: see design.md "Layout".
