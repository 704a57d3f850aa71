package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// container is what TestManifestFlags reads of a container spec.
type container struct {
	where   string
	command []string
	args    []string
}

// containers finds every container (with a command) in the YAML documents of path.
func containers(t *testing.T, path string) []container {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []container
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if cs, ok := v["containers"].([]any); ok {
					for _, c := range cs {
						c, _ := c.(map[string]any)
						if cmd := strings_(c["command"]); len(cmd) > 0 {
							out = append(out, container{where: path + ": container " + c["name"].(string), command: cmd, args: strings_(c["args"])})
						}
					}
				}
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(doc)
	}
}

// readYAML decodes the one YAML document of path into v.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func strings_(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

var (
	helpFlagLineRE = regexp.MustCompile(`^\s{2,}--[a-z]`)
	helpFlagRE     = regexp.MustCompile(`--([a-z0-9][a-z0-9-]*)`)
)

// helpFlags runs "bin sub... --help" and returns the flags its help lists, or an error when
// the command does not exist.
func helpFlags(binary string, sub []string) (map[string]bool, error) {
	out, err := exec.Command(filepath.Join(bin, binary), append(sub, "--help")...).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("No help topic")) {
		return nil, errors.New(strings.TrimSpace(string(out)))
	}
	flags := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if !helpFlagLineRE.MatchString(line) {
			continue
		}
		spec, _, _ := strings.Cut(strings.TrimSpace(line), "  ") // the flag names, before the usage
		for _, m := range helpFlagRE.FindAllStringSubmatch(spec, -1) {
			flags[m[1]] = true
		}
	}
	return flags, nil
}

// TestManifestFlags checks every container of the manifests that runs one of kmigrate's
// binaries: its subcommand exists and every --flag it passes is one the subcommand's --help
// lists. A typo, or a flag a manifest expects before the binary has it, fails here.
func TestManifestFlags(t *testing.T) {
	files, err := filepath.Glob("*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		for _, c := range containers(t, f) {
			binary := filepath.Base(c.command[0])
			if c.command[0] != "/usr/local/bin/"+binary || !strings.HasPrefix(binary, "k") {
				t.Errorf("%s: command %q: the image has the tools in /usr/local/bin", c.where, c.command)
				continue
			}
			checked++
			var sub []string
			for len(c.args) > 0 && !strings.HasPrefix(c.args[0], "-") {
				sub, c.args = append(sub, c.args[0]), c.args[1:]
			}
			known, err := helpFlags(binary, sub)
			if err != nil {
				t.Errorf("%s: %s %s: no such command: %v", c.where, binary, strings.Join(sub, " "), err)
				continue
			}
			for _, a := range c.args {
				name, ok := strings.CutPrefix(a, "--")
				if !ok {
					continue // an operand, such as merge's files
				}
				name, _, _ = strings.Cut(name, "=")
				if !known[name] {
					t.Errorf("%s: %s %s has no flag --%s", c.where, binary, strings.Join(sub, " "), name)
				}
			}
		}
	}
	if checked < 6 {
		t.Fatalf("checked %d containers, want the 6 of deploy/ (kmirror, kverify diff x3, kverify merge, kreconcile)", checked)
	}
	t.Logf("%d containers checked", checked)
}

// TestExampleConfig checks that the mm2.properties of the ConfigMap lints clean: MirrorMaker 2
// would read every key as written, and kmigrate reads it (users from the JAAS configs, the
// passwords from the Secret's files).
func TestExampleConfig(t *testing.T) {
	out, err := exec.Command(filepath.Join(bin, "kmirror"), "lint", "mm2.properties").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("CLEAN: no findings")) {
		t.Fatalf("kmirror lint mm2.properties: %v\n%s", err, out)
	}
}

// TestScrapeAnnotations checks that each pod annotated for scraping serves metrics where the
// annotations say: prometheus.io/port is a port of its container, the one its --metrics-addr
// listens on, and its probes use that port; and that the scrape job keeps annotated pods.
func TestScrapeAnnotations(t *testing.T) {
	pods := 0
	for _, f := range []string{"kmirror/statefulset.yaml", "kverify/follow-deployment.yaml"} {
		var d struct {
			Spec struct {
				Template struct {
					Metadata struct {
						Annotations map[string]string `yaml:"annotations"`
					} `yaml:"metadata"`
					Spec struct {
						Containers []struct {
							Args  []string `yaml:"args"`
							Ports []struct {
								Name          string `yaml:"name"`
								ContainerPort int    `yaml:"containerPort"`
							} `yaml:"ports"`
							Liveness  *probe `yaml:"livenessProbe"`
							Readiness *probe `yaml:"readinessProbe"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		readYAML(t, f, &d)
		ann := d.Spec.Template.Metadata.Annotations
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/path"] != "/metrics" {
			t.Errorf("%s: annotations %v: want prometheus.io/scrape true and path /metrics", f, ann)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || fmt.Sprint(c.Ports[0].ContainerPort) != ann["prometheus.io/port"] {
			t.Errorf("%s: container ports %+v, want one named metrics on prometheus.io/port %s", f, c.Ports, ann["prometheus.io/port"])
		}
		if !slices.Contains(c.Args, "--metrics-addr=:"+ann["prometheus.io/port"]) {
			t.Errorf("%s: args %q do not listen on :%s", f, c.Args, ann["prometheus.io/port"])
		}
		for _, p := range []*probe{c.Liveness, c.Readiness} {
			if p != nil && p.HTTPGet.Port != "metrics" {
				t.Errorf("%s: a probe on port %q, want metrics", f, p.HTTPGet.Port)
			}
		}
		pods++
	}
	b, err := os.ReadFile("prometheus/kmigrate-scrape.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"role: pod", "__meta_kubernetes_pod_annotation_prometheus_io_scrape", "__meta_kubernetes_pod_annotation_prometheus_io_port", "__meta_kubernetes_pod_annotation_prometheus_io_path"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("kmigrate-scrape.yml does not use %s", want)
		}
	}
	var scrape map[string]any
	if err := yaml.Unmarshal(b, &scrape); err != nil {
		t.Fatalf("kmigrate-scrape.yml: %v", err)
	}
	t.Logf("%d scraped pod templates checked", pods)
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// TestKmirrorStaticMembership checks that each kmirror pod is a static member of the source
// group with an ID of its own that survives its restarts: the workload is a StatefulSet (stable
// pod names), each pod's KMIRROR_GROUP_INSTANCE_ID is its name, and kmirror run reads that
// variable for --group-instance-id.
func TestKmirrorStaticMembership(t *testing.T) {
	const f, env = "kmirror/statefulset.yaml", "KMIRROR_GROUP_INSTANCE_ID"
	var d struct {
		Kind string `yaml:"kind"`
		Spec struct {
			ServiceName string `yaml:"serviceName"`
			Template    struct {
				Spec struct {
					Containers []struct {
						Name string   `yaml:"name"`
						Args []string `yaml:"args"`
						Env  []struct {
							Name      string `yaml:"name"`
							Value     string `yaml:"value"`
							ValueFrom struct {
								FieldRef struct {
									FieldPath string `yaml:"fieldPath"`
								} `yaml:"fieldRef"`
							} `yaml:"valueFrom"`
						} `yaml:"env"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	readYAML(t, f, &d)
	if d.Kind != "StatefulSet" || d.Spec.ServiceName == "" {
		t.Errorf("%s: kind %q, serviceName %q: want a StatefulSet (stable pod names) with its headless Service", f, d.Kind, d.Spec.ServiceName)
	}
	found := false
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == env {
				found = true
				if e.Value != "" || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
					t.Errorf("%s: container %s: %s is %q (fieldRef %q), want the pod's name (fieldRef metadata.name)", f, c.Name, env, e.Value, e.ValueFrom.FieldRef.FieldPath)
				}
			}
		}
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--group-instance-id") {
				t.Errorf("%s: container %s passes %s: one ID for every pod fences all but one", f, c.Name, a)
			}
		}
	}
	if !found {
		t.Errorf("%s: no container sets %s", f, env)
	}
	out, err := exec.Command(filepath.Join(bin, "kmirror"), "run", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("kmirror run --help: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "--group-instance-id") {
			if !strings.Contains(line, "$"+env) {
				t.Errorf("kmirror run --help: --group-instance-id does not read $%s: %s", env, line)
			}
			return
		}
	}
	t.Errorf("kmirror run --help lists no --group-instance-id")
}
