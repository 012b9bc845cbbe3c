// atls_client: a client-side aTLS handshake (docs/ARCHITECTURE.md, "aTLS") with nothing but Go's standard library.
//
// It sends base64(nonce) as the TLS ServerName, accepts the server's self-signed certificate only if its
// signature verifies under its own key, it carries the attestation extension with the given OID, and the
// document's user_data (protobuf field 6) equals SHA-256 of the certificate's SubjectPublicKeyInfo. It then
// prints what it received, one key=value per line, for the Rust test to validate the document itself.
//
// Usage: atls_client ADDR OID NONCE_HEX
// Build: GO111MODULE=off GOPATH=<tmp> go build -o atls_client atls_client.go (no modules, no downloads).
package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: atls_client ADDR OID NONCE_HEX")
		os.Exit(2)
	}
	addr, oidText := os.Args[1], os.Args[2]
	nonce, err := hex.DecodeString(os.Args[3])
	if err != nil || len(nonce) != 32 {
		fmt.Fprintln(os.Stderr, "NONCE_HEX must be 32 bytes of hex")
		os.Exit(2)
	}
	oid, err := parseOID(oidText)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	serverName := base64.StdEncoding.EncodeToString(nonce)

	var document []byte
	var spkiHash [32]byte
	config := &tls.Config{
		ServerName: serverName,
		// No CA: the certificate is judged by VerifyPeerCertificate below.
		InsecureSkipVerify: true,
		NextProtos:         []string{"h2"},
		MinVersion:         tls.VersionTLS12,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) != 1 {
				return fmt.Errorf("want exactly one certificate, got %d", len(raw))
			}
			cert, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			if err := cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature); err != nil {
				return fmt.Errorf("self-signature: %w", err)
			}
			for _, ext := range cert.Extensions {
				if ext.Id.Equal(oid) {
					document = ext.Value
				}
			}
			if document == nil {
				return errors.New("no attestation extension " + oidText)
			}
			spkiHash = sha256.Sum256(cert.RawSubjectPublicKeyInfo)
			userData, err := protoBytesField(document, 6)
			if err != nil {
				return fmt.Errorf("document: %w", err)
			}
			if !bytes.Equal(userData, spkiHash[:]) {
				return errors.New("user_data is not SHA-256 of the certificate's SubjectPublicKeyInfo")
			}
			return nil
		},
	}
	conn, err := tls.Dial("tcp", addr, config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "handshake:", err)
		os.Exit(1)
	}
	state := conn.ConnectionState()
	fmt.Printf("version=%04x\n", state.Version)
	fmt.Printf("alpn=%s\n", state.NegotiatedProtocol)
	fmt.Printf("server_name=%s\n", serverName)
	fmt.Printf("spki_sha256=%s\n", hex.EncodeToString(spkiHash[:]))
	fmt.Printf("document=%s\n", hex.EncodeToString(document))
	conn.Close()
}

func parseOID(text string) ([]int, error) {
	var oid []int
	for _, part := range strings.Split(text, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("bad OID %q", text)
		}
		oid = append(oid, n)
	}
	return oid, nil
}

// protoBytesField returns the last top-level length-delimited field number `field` of a protobuf message.
func protoBytesField(b []byte, field uint64) ([]byte, error) {
	var out []byte
	found := false
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad key")
		}
		b = b[n:]
		switch key & 7 {
		case 0:
			if _, n = binary.Uvarint(b); n <= 0 {
				return nil, errors.New("bad varint")
			}
			b = b[n:]
		case 1, 5:
			size := 8
			if key&7 == 5 {
				size = 4
			}
			if len(b) < size {
				return nil, errors.New("truncated fixed field")
			}
			b = b[size:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return nil, errors.New("bad length")
			}
			if key>>3 == field {
				out, found = b[n:n+int(l)], true
			}
			b = b[n+int(l):]
		default:
			return nil, fmt.Errorf("unsupported wire type %d", key&7)
		}
	}
	if !found {
		return nil, fmt.Errorf("field %d absent", field)
	}
	return out, nil
}
