#if canImport(Glibc)
import Glibc
#endif
import PushbenchCLI

// One catch point: the CLI parses, runs and returns the process exit status.
exit(PushbenchMain.run(CommandLine.arguments))
