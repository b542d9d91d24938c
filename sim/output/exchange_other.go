//go:build !linux

package output

// exchange: only Linux swaps two names atomically; ReplaceDir falls back to
// two renames.
func exchange(a, b string) error { return errExchangeUnsupported }
