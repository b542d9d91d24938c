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
		{GiB(int64(80 << 30)), "80.0 GiB"},
		{Compact(2, 3), "2"},
		{Compact(0.75, 3), "0.75"},
		{Compact(5e5, 3), "500,000"},
		{Compact(1.07e4, 4), "10,700"},
		{Compact(1.234e-7, 3), "0.000000123"},
		{Plain(12), "12"},
		{Plain(0.35), "0.35"},
		{Bytes(26.4e9), "26.4 GB"},
		{Bytes(int64(1 << 20)), "1.05 MB"},
		{Bytes(512.0), "512 B"},
		{Bytes(3e15), "3 PB"},
		{Count(70.55e9), "70.55B"},
		{Count(2e12), "2T"},
		{Count(125e6), "125M"},
		{Count(512), "512"},
		{Fixed(12345.678, 2), "12,345.68"},
		{Fixed(-1234, 2), "-1,234.00"},
		{Fixed(0.03, 2), "0.03"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
