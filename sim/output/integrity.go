package output

import "errors"

// ErrDamaged is wrapped by every error about a file that is not as
// simtrain wrote it (the CLI reports it as bad input, exit status 2).
var ErrDamaged = errors.New("damaged file")
