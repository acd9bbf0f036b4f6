#if canImport(Glibc)
import Glibc
#endif
import PushbenchCLI
import PushbenchTestSupport

// pushbench with the test-only seams filled: the slowed encoder of PUSHBENCH_TEST_SLOW_ENCODER, which
// checks the nightly's regression gate (docs/nightly.md). Not for measurements.
TestSlowdown.install()
exit(PushbenchMain.run(CommandLine.arguments))
