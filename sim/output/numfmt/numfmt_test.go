package numfmt

import "testing"

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Sig(0.012345), "0.0123"},
		{Sig(1.5), "1.50"},
		{Sig(123.4), "123"},
		{Sig(1234.5), "1,235"},
		{Digits(1.69912, 4), "1.699"},
		{Seconds4(0.0123456), "12.35 ms"},
		{Grouped(-1234567), "-1,234,567"},
		{Seconds(0.00042), "420 µs"},
		{Seconds(7200), "2.00 h"},
		{USD(12.345), "$12.3"},
		{USD(1.07e4), "$10,700"},
		{USD(5e5), "$500,000"},
		{Pct(0.4567), "45.7%"},
		{GB(26.4e9), "26.4 GB"},
		{GiB(80 << 30), "80.0 GiB"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
