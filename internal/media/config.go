package media

import "errors"

// Config chooses a Store: the bucket when S3Endpoint is set, else the
// directory Dir. The comments name the environment variables the settings
// are read from.
type Config struct {
	Dir         string // MEDIA_DIR
	S3Endpoint  string // MEDIA_S3_ENDPOINT: host[:port], no scheme
	S3Bucket    string // MEDIA_S3_BUCKET
	S3AccessKey string // MEDIA_S3_ACCESS_KEY
	S3SecretKey string // MEDIA_S3_SECRET_KEY
	S3Region    string // MEDIA_S3_REGION: empty: asked of the server
	S3UseSSL    bool   // MEDIA_S3_USE_SSL
	S3Prefix    string // MEDIA_S3_PREFIX: put before every key, e.g. "media/"
}

// Open returns the Store cfg chooses.
func Open(cfg Config) (Store, error) {
	if cfg.S3Endpoint != "" {
		return NewS3(cfg)
	}
	if cfg.Dir == "" {
		return nil, errors.New("media: set a directory or an S3 endpoint")
	}
	return NewFS(cfg.Dir)
}
