package main

import (
	"flag"
	"os"
	"strconv"
)

// targetFlags name the OpenAI-compatible server a client benchmark talks
// to (bench serve, bench soak).
type targetFlags struct {
	baseURL, host, model, apiKey string
	port                         int
}

// register adds --base-url, --host, --port, --model and --api-key to fs.
func (f *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.baseURL, "base-url", "", "server URL (default http://HOST:PORT)")
	fs.StringVar(&f.host, "host", "127.0.0.1", "server host, when --base-url is not given")
	fs.IntVar(&f.port, "port", 8000, "server port, when --base-url is not given")
	fs.StringVar(&f.model, "model", "", "model name to request (default: the first of GET /v1/models)")
	fs.StringVar(&f.apiKey, "api-key", os.Getenv("OPENAI_API_KEY"), "bearer key (default $OPENAI_API_KEY)")
}

// resolveBaseURL sets baseURL from host and port when it was not given.
func (f *targetFlags) resolveBaseURL() {
	if f.baseURL == "" {
		f.baseURL = "http://" + f.host + ":" + strconv.Itoa(f.port)
	}
}
