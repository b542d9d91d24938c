package hardware

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// FrameworkProfile is one training framework's defaults (data/frameworks.yaml):
// the scenario fields it sets when the scenario leaves them unset, each with
// the framework code or documentation that says so. The scenario package
// applies them (training.framework); this package only reads and checks
// the file's shape.
type FrameworkProfile struct {
	Name        string
	Description string
	Defaults    []FrameworkDefault
}

// FrameworkDefault is one field a profile sets: its dotted scenario path,
// its value as a YAML scalar, and its source. When, if set, maps dotted
// paths to the values (as written) one of which the scenario must have for
// the default to apply (DeepSpeed's stage-3 prefetch bucket only with
// parallel.zero 3).
type FrameworkDefault struct {
	Path   string
	Value  yaml.Node
	Source string
	When   map[string][]string
	// Since and Until, if set, bound the framework code the default holds
	// for, as ISO dates (YYYY-MM-DD) of the commits that brought and
	// removed it: it applies to a scenario whose training.framework_date d
	// has Since <= d < Until. A scenario without a date runs the current
	// release, so it gets every default without an Until. The loader
	// guarantees both parse and Since < Until.
	Since, Until string
}

// DateLayout is the layout of a framework date (training.framework_date,
// a default's since and until): an ISO calendar date.
const DateLayout = "2006-01-02"

// InDate reports whether the default holds for framework code of the given
// date ("" = the current release, which has every default without Until).
// ISO dates order as strings.
func (d FrameworkDefault) InDate(date string) bool {
	if date == "" {
		return d.Until == ""
	}
	return (d.Since == "" || d.Since <= date) && (d.Until == "" || date < d.Until)
}

// frameworkFile is data/frameworks.yaml as decoded (its types named so
// that catalog_gen.go can spell them).
type frameworkFile struct {
	Frameworks map[string]frameworkRecord `yaml:"frameworks"`
}

type frameworkRecord struct {
	Description string                   `yaml:"description"`
	Defaults    []frameworkDefaultRecord `yaml:"defaults"`
}

type frameworkDefaultRecord struct {
	Path   string              `yaml:"path"`
	Value  yaml.Node           `yaml:"value"`
	Source string              `yaml:"source"`
	When   map[string][]string `yaml:"when"`
	Since  string              `yaml:"since"`
	Until  string              `yaml:"until"`
}

// decodeFrameworks decodes data/frameworks.yaml.
func decodeFrameworks() (*frameworkFile, error) {
	var f frameworkFile
	if err := decodeFile("data/frameworks.yaml", &f); err != nil {
		return nil, err
	}
	return &f, nil
}

var loadFrameworks = sync.OnceValues(func() (map[string]FrameworkProfile, error) {
	// generated (catalog_gen.go) unless built without it: yaml.v3's
	// parse of the 23 KB file was most of a framework-naming run's
	// catalog start (cat43).
	f, err := fromGenerated(generatedFrameworks, decodeFrameworks)
	if err != nil {
		return nil, err
	}
	out := map[string]FrameworkProfile{}
	for _, name := range sortedKeys(f.Frameworks) {
		r := f.Frameworks[name]
		if name == "auto" {
			return nil, fmt.Errorf("hardware catalog: frameworks.yaml: %q is reserved (no profile)", name)
		}
		if r.Description == "" {
			return nil, fmt.Errorf("hardware catalog: frameworks.yaml: %s: needs a description", name)
		}
		p := FrameworkProfile{Name: name, Description: r.Description}
		seen := map[string]bool{}
		for _, d := range r.Defaults {
			switch {
			case d.Path == "" || d.Source == "":
				return nil, fmt.Errorf("hardware catalog: frameworks.yaml: %s: every default needs a path and a source", name)
			case d.Value.Kind != yaml.ScalarNode:
				return nil, fmt.Errorf("hardware catalog: frameworks.yaml: %s: %s: the value must be a scalar", name, d.Path)
			case d.Path == "training.framework":
				return nil, fmt.Errorf("hardware catalog: frameworks.yaml: %s: a profile cannot set training.framework", name)
			case seen[d.Path]:
				return nil, fmt.Errorf("hardware catalog: frameworks.yaml: %s: %s set twice", name, d.Path)
			case !isDate(d.Since) || !isDate(d.Until):
				return nil, fmt.Errorf("hardware catalog: frameworks.yaml: %s: %s: since and until must be dates (YYYY-MM-DD)", name, d.Path)
			case d.Since != "" && d.Until != "" && d.Since >= d.Until:
				return nil, fmt.Errorf("hardware catalog: frameworks.yaml: %s: %s: since %s is not before until %s", name, d.Path, d.Since, d.Until)
			}
			seen[d.Path] = true
			p.Defaults = append(p.Defaults, FrameworkDefault{Path: d.Path, Value: d.Value, Source: d.Source, When: d.When, Since: d.Since, Until: d.Until})
		}
		out[name] = p
	}
	return out, nil
})

// isDate reports whether s is empty or an ISO date (DateLayout).
func isDate(s string) bool {
	if s == "" {
		return true
	}
	_, err := time.Parse(DateLayout, s)
	return err == nil
}

// LookupFramework returns the framework profile named name.
func LookupFramework(name string) (FrameworkProfile, error) {
	m, err := loadFrameworks()
	if err != nil {
		return FrameworkProfile{}, err
	}
	p, ok := m[name]
	if !ok {
		return FrameworkProfile{}, fmt.Errorf("framework %q: unknown (valid: auto, %s)", name, strings.Join(sortedKeys(m), ", "))
	}
	return p, nil
}

// FrameworkNames lists the framework profiles, sorted.
func FrameworkNames() []string {
	m, err := loadFrameworks()
	if err != nil {
		panic(err) // embedded: a build defect, caught by the tests
	}
	return sortedKeys(m)
}
