import PushVocabulary
import Testing

@Suite struct PrometheusTextTests {
    @Test func familiesHaveHelpTypeAndSortedEscapedLabels() {
        var t = PrometheusText()
        t.family("x_total", .counter, "Things\nseen.", [(["b": "2", "a": "q\"uo\\te\n"], 3)])
        t.family("y", .gauge, "A gauge.", 0.25)
        t.family("empty_total", .counter, "Never written.", [])
        #expect(t.text == """
            # HELP x_total Things\\nseen.
            # TYPE x_total counter
            x_total{a="q\\"uo\\\\te\\n",b="2"} 3
            # HELP y A gauge.
            # TYPE y gauge
            y 0.25

            """)
    }

    @Test func numbersAreWrittenExactly() {
        #expect(PrometheusText.number(0) == "0")
        #expect(PrometheusText.number(18_446_744_073) == "18446744073")
        #expect(PrometheusText.number(0.001234) == "0.001234")
        #expect(PrometheusText.number(.nan) == "NaN")
        #expect(PrometheusText.number(.infinity) == "+Inf")
        #expect(PrometheusText.number(-.infinity) == "-Inf")
    }
}
