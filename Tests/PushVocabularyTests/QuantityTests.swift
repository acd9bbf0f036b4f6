@testable import PushVocabulary
import Testing

@Suite struct QuantityTests {
    func duration(_ text: String, _ bare: BareNumber = .refused) -> ParsedDuration? {
        try? Quantity.duration(text, bareNumber: bare)
    }

    @Test(arguments: [
        ("250ns", 250e-9, 250.0), ("250us", 250e-6, 250e3), ("250µs", 250e-6, 250e3), ("250ms", 0.25, 250e6),
        ("1.5s", 1.5, 1.5e9), ("2m", 120, 120e9), ("1h", 3600, 3600e9), ("0s", 0, 0),
    ])
    func everyUnit(_ c: (String, Double, Double)) throws {
        let d = try #require(duration(c.0))
        #expect(abs(d.seconds - c.1) <= c.1 * 1e-15 && abs(d.nanoseconds - c.2) <= c.2 * 1e-15, "\(c.0): \(d)")
    }

    @Test func oneNumberAndOneUnitComputeAsTheParsersBeforeDid() throws {
        // Each field is the number times the unit's own factor, so a caller gets bit for bit what it
        // computed itself: 7 * 1e-3 is not the same double as 7e6 / 1e9.
        for (text, v, s, ns) in [("7ms", 7.0, 1e-3, 1e6), ("160us", 160, 1e-6, 1e3), ("0.3s", 0.3, 1, 1e9), ("2.5m", 2.5, 60, 60e9)] {
            let d = try #require(duration(text))
            #expect(d.seconds == v * s && d.nanoseconds == v * ns, "\(text)")
        }
        #expect(duration("1e3ms")?.seconds == 1)
    }

    @Test func aBareNumberIsRefusedUnlessACallerAllowsSeconds() {
        // Is `--duration 3` three seconds or three milliseconds? The user says which.
        #expect(duration("30") == nil && duration("0.5") == nil)
        #expect(duration("30", .seconds) == ParsedDuration(seconds: 30, nanoseconds: 30e9))
        #expect(duration("0.5", .seconds)?.nanoseconds == 0.5e9)
        #expect(duration("30s")?.seconds == 30)
        #expect(duration("1m30s")?.seconds == 90)
        // Zero is zero in every unit.
        #expect(duration("0") == ParsedDuration(seconds: 0, nanoseconds: 0))
        #expect(throws: QuantityError("'2' has no unit: say which, as in 2s or 2ms (a number and a unit: ns, us or µs, ms, s, m, h; "
                                      + "several as in 1m30s)")) {
            _ = try Quantity.duration("2")
        }
    }

    @Test func compoundsGoFromTheLargestUnitDown() {
        #expect(duration("1m30s")?.seconds == 90)
        #expect(duration("1h2m3.5s")?.seconds == 3723.5)
        #expect(duration("1s500ms")?.nanoseconds == 1.5e9)
        #expect(duration("1ms250us")?.nanoseconds == 1_250_000)
        #expect(duration("2m0.5s")?.seconds == 120.5)
        for bad in ["30s1m", "1s1s", "1m30", "1m30x", "1us1µs", "m30s", "1m 30s", "1m-30s"] {
            #expect(duration(bad) == nil, "\(bad)")
        }
    }

    @Test func badDurationsAreRefusedWithTheAcceptedForms() {
        for bad in ["", "s", "soon", "-1s", "-1", "1.5.5s", "nan", "inf", "infs", "1 s", "1S", "1sec", "1x"] {
            #expect(duration(bad) == nil, "\(bad)")
        }
        #expect(throws: QuantityError("'soon' is not a duration (a number and a unit: ns, us or µs, ms, s, m, h; "
                                      + "several as in 1m30s)")) {
            _ = try Quantity.duration("soon")
        }
        #expect(throws: QuantityError("'soon' is not a duration (a number and a unit: ns, us or µs, ms, s, m, h; "
                                      + "several as in 1m30s, or a number of seconds)")) {
            _ = try Quantity.duration("soon", bareNumber: .seconds)
        }
    }

    @Test func rates() throws {
        func rate(_ t: String) -> ParsedRate? { try? Quantity.rate(t) }
        #expect(rate("100") == nil, "per what?")
        #expect(try Quantity.rate("100", bareNumber: .seconds) == ParsedRate(count: 100, windowSeconds: 1))
        #expect(rate("0") == ParsedRate(count: 0, windowSeconds: 1))
        #expect(rate("100/s") == ParsedRate(count: 100, windowSeconds: 1))
        #expect(rate("10/sec")?.perSecond == 10)
        #expect(rate("600000/min") == ParsedRate(count: 600_000, windowSeconds: 60))
        #expect(rate("60/m")?.perSecond == 1)
        #expect(rate("3600/h")?.perSecond == 1 && rate("3600/hour")?.perSecond == 1)
        #expect(rate("5/10s") == ParsedRate(count: 5, windowSeconds: 10))
        #expect(rate("5/2min")?.windowSeconds == 120)
        #expect(rate("1/1.5m")?.windowSeconds == 90)
        #expect(rate("1/500ms")?.perSecond == 2)
        #expect(rate("9/1m30s")?.windowSeconds == 90)
        #expect(rate("0.01/s")?.perSecond == 0.01)
        #expect(rate("0/s")?.perSecond == 0)
        for bad in ["", "fast", "-1/s", "1/", "1/0s", "1/x", "1/2", "1/2/3", "1/s/", "nan/s", "1/-1s"] {
            #expect(rate(bad) == nil, "\(bad)")
        }
        #expect(throws: QuantityError("'fast' is not a rate (N/UNIT as in 100/s, 600000/min, 5/10s)")) {
            _ = try Quantity.rate("fast")
        }
        #expect(throws: QuantityError("'0.01' has no time unit: say per what, as in 0.01/s or 0.01/min "
                                      + "(N/UNIT as in 100/s, 600000/min, 5/10s)")) {
            _ = try Quantity.rate("0.01")
        }
    }

    @Test func ratesCountInThousandsAndMillions() throws {
        func perSecond(_ t: String) -> Double? { try? Quantity.rate(t, bareNumber: .seconds).perSecond }
        #expect(perSecond("500") == 500 && perSecond("10k") == 10_000 && perSecond("10K") == 10_000)
        #expect(perSecond("1.5k") == 1_500 && perSecond("2M") == 2_000_000 && perSecond("0") == 0)
        #expect(perSecond("10k/s") == 10_000 && perSecond("1.2M/min") == 20_000)
        for bad in ["", "k", "-1", "1m", "1kk", "nan", "10 k", "k/s"] {
            #expect(perSecond(bad) == nil, "\(bad)")
        }
        #expect(throws: QuantityError("'fast' is not a rate (N per second as in 500, 10k, 1.5k, 2M, or N/UNIT as in 100/s, 600000/min, 5/10s)")) {
            _ = try Quantity.rate("fast", bareNumber: .seconds)
        }
    }

    @Test func fractions() throws {
        #expect(try Quantity.fraction("0") == 0 && Quantity.fraction("1") == 1 && Quantity.fraction("0.05") == 0.05)
        #expect(try Quantity.fraction("5%") == 0.05 && Quantity.fraction("100%") == 1 && Quantity.fraction("0%") == 0)
        for bad in ["", "%", "2", "-0.1", "101%", "x", "5 %", "nan", "inf%"] {
            #expect((try? Quantity.fraction(bad)) == nil, "\(bad)")
        }
        #expect(throws: QuantityError("'2' is not a fraction between 0 and 1 (or 0%...100%)")) { _ = try Quantity.fraction("2") }
    }

    @Test func sizes() throws {
        for (text, bytes) in [("4096", 4096), ("0", 0), ("512B", 512), ("4KiB", 4096), ("1.5MiB", 1_572_864),
                              ("1GiB", 1_073_741_824), ("4kB", 4000), ("4KB", 4000), ("2MB", 2_000_000), ("1GB", 1_000_000_000)] {
            #expect(try Quantity.size(text) == bytes, "\(text)")
        }
        for bad in ["", "B", "KiB", "1.5B", "1.5", "-1", "4K", "4k", "4kib", "x", "1e30GiB", "4 KiB"] {
            #expect((try? Quantity.size(bad)) == nil, "\(bad)")
        }
        #expect(throws: QuantityError("'4K' is not a size (bytes, or a number and a unit: B, KiB, MiB, GiB, kB, MB, GB; "
                                      + "a whole number of bytes)")) { _ = try Quantity.size("4K") }
    }
}
